"""An object store named by a URL: the one way caseforge reads and writes files that other machines share.

    store = open_store("s3://bucket/prefix")          # or gs://bucket/prefix, file:///srv/x, /srv/x, relative/x
    store.check()                                     # bounded preflight: StoreError naming the store and the fix
    store.put("a/b.json", b"...")                     # whole or nothing (a reader never sees half an object)
    store.get("a/b.json") -> bytes                    # FileNotFoundError when absent
    store.exists("a/b.json"); store.list("a/") -> ["a/b.json", ...]   # names relative to the store, sorted
    store.delete("a/b.json"); store.delete_all("a/")  # absent names are fine
    store.child("a") -> Store                         # the same store, one prefix deeper
    store.put_file(name, local_path); store.get_file(name, local_path)

Backends are fsspec filesystems: `s3://` through s3fs (any S3-compatible server: `endpoint_url`, else the
standard `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL` of the environment), `gs://` through gcsfs (the optional
extra `gcs`; without it, a one-line error says so), `file://` and plain paths on this machine's disk.

Credentials never pass through caseforge: s3fs takes them from the machine's environment the way every AWS
tool does (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, AWS_PROFILE and ~/.aws, an instance
or pod role), gcsfs from Google's application default credentials. A store's URL and `describe()` carry no
secret, so both may be logged and passed between machines.

Names are '/'-separated and relative to the store's prefix; listings are never cached (another machine may
have written a moment ago). Every call is bounded: connections time out after `connect_timeout_s`, reads
after `read_timeout_s`, with a few retries.
"""
from __future__ import annotations

import os
import re
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import fsspec

from caseforge.atomic import write_atomically

LOOPBACK_HOSTS = {"localhost", "::1", "[::1]"}
PROBE_PREFIX = ".caseforge-check-"       # check()'s probe object (one a killed check left is harmless debris)


class StoreError(RuntimeError):
    """A store that cannot be used, in one line that names it and says what to fix."""


def is_loopback_url(url: str | None) -> bool:
    """Whether a URL points at this machine's own loopback (so means another machine on every other host)."""
    if not url:
        return False
    host = (urlsplit(url).hostname or "").lower()
    return host in LOOPBACK_HOSTS or host.startswith("127.") or host == "0.0.0.0"


def endpoint_from_environment() -> str | None:
    """The S3 endpoint this machine's environment names (the AWS tools' own variables)."""
    return os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None


@dataclass
class Store:
    url: str                    # as given (no secret in it), for messages
    fs: fsspec.AbstractFileSystem = field(repr=False)
    root: str                   # the prefix in the filesystem's own terms, no trailing '/'
    endpoint_url: str | None = None
    local: bool = False

    # --- names ---------------------------------------------------------------------------------
    def path(self, name: str = "") -> str:
        name = name.strip("/")
        if any(part in ("", ".", "..") for part in name.split("/")) and name:
            raise ValueError(f"{self.url}: not a plain relative name: {name!r}")
        return f"{self.root}/{name}" if name else self.root

    def child(self, name: str) -> "Store":
        return Store(f"{self.url.rstrip('/')}/{name.strip('/')}", self.fs, self.path(name), self.endpoint_url,
                     self.local)

    def describe(self) -> str:
        return self.url + (f" (endpoint {self.endpoint_url})" if self.endpoint_url else "")

    # --- objects -------------------------------------------------------------------------------
    def put(self, name: str, data: bytes) -> None:
        """Write one object whole: a reader sees the old one, the new one or none, never part of it."""
        target = self.path(name)
        if self.local:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            write_atomically(target, data)
        else:                   # one PUT: S3 and GCS make an object visible only once it is complete
            self.fs.pipe_file(target, data)

    def get(self, name: str) -> bytes:
        return self.fs.cat_file(self.path(name))

    def exists(self, name: str) -> bool:
        return self.fs.exists(self.path(name))

    def list(self, prefix: str = "") -> list[str]:
        """Every object under `prefix` (a folder-like prefix; '' for all), as names relative to the store."""
        base = self.path(prefix.rstrip("/")) if prefix.strip("/") else self.root
        try:
            found = self.fs.find(base)
        except FileNotFoundError:
            return []
        root = self.root.rstrip("/") + "/"
        names = [p[len(root):] for p in (str(f) for f in found) if p.startswith(root)]
        if self.local:          # a local put's temporary file is not an object yet
            names = [n for n in names if not n.rsplit("/", 1)[-1].startswith(".")]
        return sorted(names)

    def delete(self, name: str) -> None:
        try:
            self.fs.rm_file(self.path(name))
        except FileNotFoundError:
            pass

    def delete_all(self, prefix: str = "") -> None:
        for name in self.list(prefix):
            self.delete(name)
        if self.local:          # empty folders left by the objects
            base = Path(self.path(prefix.rstrip("/")) if prefix.strip("/") else self.root)
            for folder in sorted((p for p in base.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)) \
                    if base.is_dir() else []:
                _rmdir_quietly(folder)
            _rmdir_quietly(base)

    def put_file(self, name: str, local_path: str | Path) -> None:
        self.put(name, Path(local_path).read_bytes()) if self.local else self.fs.put_file(str(local_path),
                                                                                           self.path(name))

    def get_file(self, name: str, local_path: str | Path) -> None:
        self.fs.get_file(self.path(name), str(local_path))

    # --- preflight -----------------------------------------------------------------------------
    def check(self, timeout_s: float = 45.0, write: bool = True) -> None:
        """Write, read back, list and delete one small probe object (or only list, `write=False`), within
        `timeout_s`: StoreError in one line naming the store and what to fix, before any real work."""
        outcome: list[BaseException | None] = []

        def probe() -> None:
            try:
                if not self.local:      # the bucket first: a write may create a bucket that was never meant
                    self.fs.ls(self.root.split("/", 1)[0])
                if write:
                    name = f"{PROBE_PREFIX}{uuid.uuid4().hex[:12]}"
                    self.put(name, b"ok")
                    if self.get(name) != b"ok":
                        raise StoreError(f"store {self.describe()}: a probe object read back differently")
                    self.delete(name)
                else:
                    self.list()
                outcome.append(None)
            except BaseException as exc:   # noqa: BLE001 - handed to the caller's thread below
                outcome.append(exc)

        thread = threading.Thread(target=probe, name=f"store check {self.url}", daemon=True)
        thread.start()
        thread.join(timeout_s)
        if not outcome:
            raise StoreError(f"store {self.describe()}: no answer within {timeout_s:g} s: check that the "
                             f"endpoint is up and reachable from this machine")
        if outcome[0] is not None:
            raise explain(self, outcome[0]) from outcome[0]


def _rmdir_quietly(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass


def explain(store: Store, exc: BaseException) -> StoreError:
    """A store problem as one line: which store, what went wrong, what to fix."""
    if isinstance(exc, StoreError):
        return exc
    text = " ".join(str(exc).split()) or type(exc).__name__
    kind = type(exc).__name__
    where = f"store {store.describe()}"
    scheme = urlsplit(store.url).scheme
    credentials = ("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE) in this machine's environment"
                   if scheme == "s3" else "GOOGLE_APPLICATION_CREDENTIALS on this machine" if scheme in ("gs", "gcs")
                   else "the folder's permissions")
    lowered = text.lower()
    if "nocredentials" in kind.lower() or "unable to locate credentials" in lowered:
        return StoreError(f"{where}: no credentials found: set {credentials}")
    if any(s in lowered for s in ("signature", "invalidaccesskeyid", "access key id", "invalid_grant",
                                  "security token")):
        return StoreError(f"{where}: the credentials were refused ({text[:120]}): check {credentials}")
    if "bucket does not exist" in lowered or "nosuchbucket" in lowered:
        bucket = urlsplit(store.url).netloc
        return StoreError(f"{where}: bucket {bucket!r} does not exist there: create it, or fix the store URL")
    if isinstance(exc, PermissionError) or "access denied" in lowered or "forbidden" in lowered:
        return StoreError(f"{where}: access denied ({text[:120]}): give these credentials read and write on "
                          f"the bucket and prefix, or check {credentials}")
    if lowered.startswith("[errno 5] an error occurred ()") or "an error occurred () when calling" in lowered or \
            (isinstance(exc, FileNotFoundError) and lowered in ("not found", "404")):
        # an answer with no S3 error code in it: a 404 page, not an S3 server's error
        return StoreError(f"{where}: the endpoint answered without an S3 error ({kind}: {text[:80] or 'empty'}): it "
                          "is not an S3 server (a mistyped endpoint URL pointing at another web server?): check the "
                          "endpoint URL")
    if any(s in kind.lower() + lowered for s in ("connect", "timeout", "timed out", "name or service",
                                                  "unreachable", "refused")):
        return StoreError(f"{where}: cannot reach the endpoint ({kind}: {text[:120]}): check the endpoint URL "
                          f"and that the server is up and reachable from this machine")
    return StoreError(f"{where}: {kind}: {text[:200]}")


def open_store(url: str | Path, endpoint_url: str | None = None, connect_timeout_s: float = 5.0,
               read_timeout_s: float = 60.0, retries: int = 2) -> Store:
    """The store at `url` (see the module docstring). Opening does not touch the network: `check()` does."""
    text = str(url).strip()
    if not text:
        raise StoreError("no store given: a URL (s3://bucket/prefix, gs://bucket/prefix, file:///path) or a path")
    scheme = urlsplit(text).scheme if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", text) else ""
    if scheme in ("", "file"):
        path = Path(urlsplit(text).path if scheme == "file" else text).expanduser().resolve()
        return Store(text if scheme else str(path), fsspec.filesystem("file"), str(path), None, local=True)
    if scheme in ("s3", "s3a"):
        try:
            import s3fs
        except ImportError:
            raise StoreError(f"store {text}: s3fs is not installed (it is in requirements.lock: make setup)") from None
        endpoint = endpoint_url or endpoint_from_environment()
        fs = s3fs.S3FileSystem(
            anon=False, skip_instance_cache=True, use_listings_cache=False, endpoint_url=endpoint,
            config_kwargs={"connect_timeout": connect_timeout_s, "read_timeout": read_timeout_s,
                           "retries": {"max_attempts": retries, "mode": "standard"}})
        fs.retries = max(1, retries)        # s3fs's own retry loop around botocore's
        bucket_and_prefix = text.split("://", 1)[1].strip("/")
        if not bucket_and_prefix:
            raise StoreError(f"store {text}: no bucket named: s3://bucket/prefix")
        return Store(f"s3://{bucket_and_prefix}", fs, bucket_and_prefix, endpoint)
    if scheme in ("gs", "gcs"):
        try:
            import gcsfs
        except ImportError:
            raise StoreError(f"store {text}: gs:// needs gcsfs: pip install -e .[gcs]") from None
        fs = gcsfs.GCSFileSystem(skip_instance_cache=True, use_listings_cache=False,
                                 timeout=read_timeout_s, retries=retries)
        bucket_and_prefix = text.split("://", 1)[1].strip("/")
        return Store(f"gs://{bucket_and_prefix}", fs, bucket_and_prefix)
    raise StoreError(f"store {text}: unknown scheme {scheme!r}: use s3://, gs://, file:// or a path")
