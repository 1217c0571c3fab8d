"""A real Label Studio server for the review tests, started as `make review-server` starts it
(caseforge.review.server: its own environment .venv-review, loopback, signup closed, no version check), with an
admin and annotators who each have their own API token. One per test session (fixture `label_studio` in
tests/integration/conftest.py): a new database takes about half a minute to start on an idle machine, minutes on a
busy one; a restart on it, a few seconds."""
from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from s3_server import stop_process_group

from caseforge.review.server import REVIEW_VENV, server_environment, start_command, user_command

START_DEADLINE_S = 900


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LabelStudioServer:
    data_dir: Path
    admin: str = "admin@example.org"
    admin_password: str = "caseforge-admin-password"
    admin_token: str = "caseforge-admin-token-0001"
    port: int = field(default_factory=_free_port)
    tokens: dict[str, str] = field(default_factory=dict)       # user e-mail -> API token
    passwords: dict[str, str] = field(default_factory=dict)    # user e-mail -> password (the browser logs in)
    process: subprocess.Popen | None = None
    started_s: list[float] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        began = time.monotonic()
        log = (self.data_dir / "server.log").open("ab")
        self.process = subprocess.Popen(
            start_command(self.data_dir, self.port, self.admin, self.admin_password, self.admin_token),
            env=server_environment(self.data_dir), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        while time.monotonic() - began < START_DEADLINE_S:
            if self.process.poll() is not None:
                raise RuntimeError(f"Label Studio exited {self.process.returncode}: see {self.data_dir / 'server.log'}")
            try:
                if httpx.get(f"{self.url}/health", timeout=5).status_code == 200:
                    self.started_s.append(time.monotonic() - began)
                    self.tokens.setdefault(self.admin, self.admin_token)
                    self.passwords.setdefault(self.admin, self.admin_password)
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"Label Studio did not answer within {START_DEADLINE_S} s: see {self.data_dir / 'server.log'}")

    def stop(self) -> None:
        if self.process is not None:
            stop_process_group(self.process, grace_s=15)
            self.process = None

    def add_user(self, email: str, password: str, token: str) -> None:
        """One more user with a preset token, as Label Studio's own `init` makes one (against the running server)."""
        done = subprocess.run(user_command(self.data_dir, email, password, token), env=server_environment(self.data_dir),
                              capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        self.tokens[email] = token
        self.passwords[email] = password

    def as_user(self, email: str) -> httpx.Client:
        """An API client with that user's own token."""
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Token {self.tokens[email]}"}, timeout=60)


def review_venv_missing() -> str | None:
    if not (REVIEW_VENV / "bin" / "label-studio").exists():
        return f"{REVIEW_VENV} is missing: run `make setup-review`"
    return None
