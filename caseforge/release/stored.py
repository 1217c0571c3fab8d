"""Releases on an object store (`s3://…`, `gs://…`): the rule of a release folder, where nothing can be renamed.

A folder is swapped in by one rename; an object store has none, so a release written to a store URL U is kept
as whole, immutable release folders and a pointer, generations the way caseforge.generations keeps them:

    U/v<version>/           one release, the same files, byte for byte, as a release folder (README.md with its
                            configs, croissant.json, release.json, data/, provenance/, MANIFEST.sha256)
    U/current.json          the pointer (kind "release"; its generation is the folder, its manifest the folder's
                            MANIFEST.sha256) with {"dataset", "version", "folder", "manifest_sha256"}: the release
                            to read

A write uploads release.json first (it names the dataset, so an unfinished upload is recognisably caseforge's),
then every other file, then MANIFEST.sha256, and only then replaces current.json (one PUT: a reader sees the old
pointer or the new one). A write killed at any point leaves current.json naming the previous release, whose files
were never touched. After the pointer moves, every other folder but the previous release's (a reader that read
the old pointer may still be reading it) is deleted, unfinished uploads included. The same release written again
(same version and manifest) uploads nothing.

U is written only when it holds nothing, or only what this layout puts there for the same dataset: current.json
naming it, and v*/ folders whose release.json names it and which hold nothing their manifest does not list
(an unfinished upload has no manifest yet). Anything else is refused in one line, before anything is read.
A current.json an earlier caseforge wrote (those four fields alone) is read as it is, until the next release
replaces it.
"""
from __future__ import annotations

import hashlib
import json
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from caseforge import generations
from caseforge.atomic import process_folder
from caseforge.generations import POINTER, NotAPointer, Pointer  # noqa: F401  (POINTER: the name, for readers)
from caseforge.outputs import OutputRefused
from caseforge.release.layout import MANIFEST, METADATA
from caseforge.store import Store, StoreError, explain, open_store

KIND = "release"
RELEASE_FIELDS = ("dataset", "version", "folder", "manifest_sha256")
FOLDER = re.compile(r"v[A-Za-z0-9._-]+")
REMOTE_SCHEMES = ("s3", "s3a", "gs", "gcs")


def is_store_url(out: str | Path) -> bool:
    """Whether `out` names a release location on an object store (not a folder on this machine)."""
    return isinstance(out, str) and re.match(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://", out) is not None \
        and out.split("://", 1)[0].lower() in REMOTE_SCHEMES


def local_folder(out: str | Path) -> Path:
    """A release location on this machine as a path (`file://` URLs included)."""
    text = str(out)
    return Path(text[len("file://"):]) if text.lower().startswith("file://") else Path(out)


def release_folder_name(version: str) -> str:
    """The folder of one release under its store URL: `v` and the version, `+` as `-` (a plain key in every URL)."""
    return "v" + re.sub(r"[^A-Za-z0-9._-]", "-", version)


def child_url(out: str | Path, name: str) -> str | Path:
    """`out`/`name`, for a store URL or a folder."""
    return f"{str(out).rstrip('/')}/{name}" if is_store_url(out) else local_folder(out) / name


@dataclass
class StoredRelease:
    """A release location on a store, checked: what its pointer names now (None: no release yet)."""
    store: Store
    dataset: str
    current: dict | None = None

    def previous_metadata(self) -> dict | None:
        """The current release's release.json (the fresh cutoff depends on it), None without one."""
        if not self.current:
            return None
        try:
            data = json.loads(self.store.get(f"{self.current['folder']}/{METADATA}"))
        except FileNotFoundError:
            return None
        except Exception as exc:                    # noqa: BLE001 - a store problem, in one line
            raise explain(self.store, exc) from exc
        return data if isinstance(data, dict) else None


def _upgrade(old: dict) -> dict:
    """The current.json an earlier caseforge wrote (the release's four fields alone) in today's fields."""
    return {**old, "kind": KIND, "generation": old["folder"], "manifest": f"{old['folder']}/{MANIFEST}",
            "previous": None}


def read_current(store: Store) -> dict | None:
    """What the pointer at `store` says, every field (None when there is none); ValueError when it is not a
    caseforge release's."""
    try:
        pointer = generations.read_pointer(store, KIND, _upgrade)
    except NotAPointer as exc:
        raise ValueError(str(exc)) from None
    if pointer is None:
        return None
    data = {**pointer.fields, "kind": pointer.kind, "generation": pointer.generation, "manifest": pointer.manifest,
            "previous": pointer.previous}
    if not set(RELEASE_FIELDS) <= set(data) or not FOLDER.fullmatch(str(data["folder"])) \
            or data["generation"] != data["folder"]:
        raise ValueError(f"its {pointer.name} is not one caseforge wrote")
    return data


def _folder_of(name: str) -> str | None:
    """The release folder an object belongs to (its generation), None for a name outside every folder."""
    top, separator, _rest = name.partition("/")
    return top if separator else None


def _manifest_names(text: str) -> set[str] | None:
    names = set()
    for line in text.splitlines():
        sha, separator, rel = line.partition("  ")
        if not separator or not re.fullmatch(r"[0-9a-f]{64}", sha):
            return None
        names.add(rel)
    return names


def not_our_store_release(store: Store, dataset: str, names: list[str]) -> str | None:
    """Why the objects `names` at `store` are not a caseforge release of `dataset` in this layout (None: they are)."""
    strangers = generations.foreign(names, lambda name: FOLDER.fullmatch(_folder_of(name) or "") is not None)
    if strangers:
        return f"holds {strangers[0]}, which is not part of a caseforge release"
    folders: dict[str, list[str]] = {}
    for name in names:
        if not generations.is_pointer_or_probe(name):
            top, _, rest = name.partition("/")
            folders.setdefault(top, []).append(rest)
    try:
        current = read_current(store) if any(generations.is_pointer_or_probe(n) for n in names) else None
    except ValueError as exc:
        return f"is not a caseforge release ({exc})"
    if current is not None and current["dataset"] != dataset:
        return f"is the {current['dataset']!r} release, not {dataset!r}"
    for folder, files in sorted(folders.items()):
        if METADATA not in files:
            return f"holds {folder}/ without a {METADATA}: not a caseforge release"
        try:
            metadata = json.loads(store.get(f"{folder}/{METADATA}"))
        except ValueError:
            return f"holds {folder}/{METADATA}, which caseforge did not write"
        if not isinstance(metadata, dict) or metadata.get("dataset") != dataset:
            found = metadata.get("dataset") if isinstance(metadata, dict) else None
            return f"holds {folder}/, the {found!r} release, not {dataset!r}" if found else \
                f"holds {folder}/{METADATA}, which caseforge did not write"
        if MANIFEST in files:
            listed = _manifest_names(store.get(f"{folder}/{MANIFEST}").decode("utf-8", "replace"))
            if listed is None:
                return f"holds {folder}/{MANIFEST}, which caseforge did not write"
            extra = sorted(set(files) - listed - {MANIFEST})
            if extra:
                return f"holds {folder}/ with file(s) its manifest does not list ({', '.join(extra[:3])})"
    return None


def prepare_store_release(url: str, dataset: str, endpoint_url: str | None = None,
                          check_timeout_s: float = 45.0) -> StoredRelease:
    """The store location `url` checked for the `dataset` release: reachable and writable (StoreError, one line
    naming the store), and empty or holding this dataset's releases (OutputRefused, one line)."""
    if endpoint_url is None:
        from caseforge.settings import load_settings

        endpoint_url = load_settings().file.release.store_endpoint_url
    store = open_store(url, endpoint_url or None)
    store.check(timeout_s=check_timeout_s)
    try:
        names = store.list()
        reason = not_our_store_release(store, dataset, names) if names else None
        current = read_current(store) if not reason and names else None
    except (StoreError, OutputRefused):
        raise
    except Exception as exc:                        # noqa: BLE001 - a store problem, in one line
        raise explain(store, exc) from exc
    if reason:
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        raise OutputRefused(f"refusing to write the {dataset} release to {url}: it holds {shown} and {reason}; "
                            "caseforge replaces only an empty store prefix or one holding its own releases of the "
                            "same dataset: choose an empty or new prefix")
    return StoredRelease(store, dataset, current)


@contextmanager
def uploaded_when_done(target: StoredRelease) -> Iterator[Path]:
    """A temporary folder to write the release into; when the block ends without an error, it is uploaded to
    `target` (upload_release). On an error nothing is uploaded."""
    with process_folder(f"caseforge-{target.dataset}-release-") as folder:
        staging = folder / target.dataset
        staging.mkdir()
        yield staging
        upload_release(target, staging)


def upload_release(target: StoredRelease, staging: Path) -> str:
    """Upload the release written in `staging` to its own folder, then point current.json at it, then delete
    every folder but it and the previous release's (caseforge.generations). Returns the URL of the release's
    folder."""
    version = json.loads((staging / METADATA).read_text(encoding="utf-8"))["version"]
    manifest_sha256 = hashlib.sha256((staging / MANIFEST).read_bytes()).hexdigest()
    store, folder = target.store, release_folder_name(version)
    same = target.current is not None and target.current["folder"] == folder \
        and target.current["manifest_sha256"] == manifest_sha256
    try:
        if not same:
            files = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())
            order = [METADATA] + [f for f in files if f not in (METADATA, MANIFEST)] + [MANIFEST]
            for rel in order:
                store.put_file(f"{folder}/{rel}", staging / rel)
            previous = target.current["folder"] if target.current else None
            generations.write_pointer(store, Pointer(KIND, folder, f"{folder}/{MANIFEST}", previous, {
                "dataset": target.dataset, "version": version, "folder": folder, "manifest_sha256": manifest_sha256}))
        keep = {folder} | ({target.current["folder"]} if target.current else set())
        generations.prune(store, store.list(), keep, _folder_of)
    except (StoreError, OutputRefused):
        raise
    except Exception as exc:                        # noqa: BLE001 - a store problem, in one line
        raise explain(store, exc) from exc
    return f"{store.url}/{folder}"


def _open(url: str) -> Store:
    from caseforge.settings import load_settings

    return open_store(url, load_settings().file.release.store_endpoint_url or None)


def current_release(out: str | Path) -> str | Path | None:
    """Where the release at `out` is now (a folder, or on a store the URL of the folder current.json names);
    None when there is none yet."""
    if not is_store_url(out):
        folder = local_folder(out)
        return folder if folder.is_dir() else None
    store = _open(str(out))
    try:
        current = read_current(store)
    except ValueError:
        return None
    except Exception as exc:                        # noqa: BLE001 - a store problem, in one line
        raise explain(store, exc) from exc
    return f"{store.url}/{current['folder']}" if current else None
