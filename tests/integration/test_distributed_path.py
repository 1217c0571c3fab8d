"""The distributed path as a user meets it (issue 41, item 5), against the real S3-compatible test server
(SeaweedFS) and the commands as a user runs them (child processes on the session's shared Prefect server):
a failed publish after a single command is exit 1 with the command's own summary line first; a fan-out store
that cannot be used is one line, exit 2, never "crashed", and the failed run publishes nothing more; an endpoint
that answers 404 to everything is said not to be an S3 server; a release exported again says nothing was
uploaded."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from doc_pages import block_after
from oyez_subset import link_oyez_subset

pytestmark = [pytest.mark.samples, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def caseforge(work: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "caseforge", *args], cwd=work, env=env, capture_output=True,
                          text=True, timeout=900)


def lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("caseforge: ")]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory, samples_dir, shared_server_cli_env, s3_server):
    """A warehouse with two Oyez cases, loaded by `caseforge ingest oyez` in a folder of its own; the S3 server's
    read-write identity in the environment."""
    work = tmp_path_factory.mktemp("distributed")
    subset = link_oyez_subset(samples_dir, work / "samples", cases=2, legacy_rows=20)
    env = {k: v for k, v in shared_server_cli_env.items()
           if not k.startswith(("CASEFORGE_LLM_", "CASEFORGE_OPENAI_", "CASEFORGE_CONFIG", "CASEFORGE_DB", "AWS_"))}
    env.update(s3_server.env())
    done = caseforge(work, env, "ingest", "oyez", "--from-dir", str(subset / "oyez" / "cases"))
    assert done.returncode == 0, done.stderr[-3000:]
    return work, env, subset, s3_server.bucket


def test_a_failed_publish_after_a_single_command_is_exit_1_after_the_commands_own_summary(loaded):
    work, env, subset, _ = loaded
    (work / "caseforge.toml").write_text('[mirror]\npublish = "s3://no-such-bucket/mirror"\ncheck_timeout_s = 30\n')
    try:
        done = caseforge(work, env, "ingest", "oyez", "--from-dir", str(subset / "oyez" / "cases"))
    finally:
        (work / "caseforge.toml").unlink()
    assert done.returncode == 1, done.stderr[-3000:]
    assert "ingest oyez (run " in done.stdout                       # the work's own outcome, first
    [line] = lines(done.stderr)
    assert line.startswith("caseforge: mirror not published: store s3://no-such-bucket/mirror"), line
    assert "does not exist there" in line and "crashed" not in done.stderr
    assert done.stderr.count("mirror not published") == 1, done.stderr[-3000:]


def test_a_fan_out_store_that_cannot_be_used_is_one_line_never_crashed(loaded):
    work, env, _, _ = loaded
    (work / "caseforge.toml").write_text(
        '[fanout]\npool = "caseforge-gpu"\nstore = "s3://no-such-bucket/shards"\ncheck_timeout_s = 30\n'
        '[mirror]\npublish = "s3://no-such-bucket/mirror"\ncheck_timeout_s = 30\n'
        '[llm]\nbackend = "openai"\n[llm.backends.openai.options]\nbase_url = "http://gpu-box:8000/v1"\n')
    try:
        done = caseforge(work, env, "build", "casefacts", "--limit", "1", "--model", "Qwen/Qwen2.5-7B-Instruct",
                         "--validator-model", "google/gemma-3-27b-it")
    finally:
        (work / "caseforge.toml").unlink()
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-3000:]
    [line] = lines(done.stderr)
    assert "store s3://no-such-bucket/shards" in line and "does not exist there: create it" in line, line
    assert "crashed" not in done.stderr and "mirror not published" not in done.stderr, done.stderr[-3000:]
    assert "ERROR" not in done.stderr, done.stderr[-3000:]


class NotFoundEverywhere(BaseHTTPRequestHandler):
    """Another web server at a mistyped endpoint: 404 to every request."""

    def log_message(self, *args):
        pass

    def _not_found(self):
        body = b"<html><body><h1>Not Found</h1></body></html>"
        self.send_response(404)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _not_found


def test_an_endpoint_answering_404_to_everything_is_said_not_to_be_an_s3_server(loaded, monkeypatch, capsys):
    from caseforge.cli import main

    server = ThreadingHTTPServer(("127.0.0.1", 0), NotFoundEverywhere)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    work, env, _, _ = loaded
    for name, value in env.items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.chdir(work)
    try:
        assert main(["sql", "--mirror", "s3://caseforge/mirror", "SELECT 1"]) == 2
    finally:
        server.shutdown()
    [line] = lines(capsys.readouterr().err)
    assert "is not an S3 server" in line and "check the endpoint URL" in line, line


def test_an_export_that_uploads_nothing_says_so(loaded, monkeypatch, capsys):
    from caseforge.cli import main

    work, env, _, bucket = loaded
    for name, value in env.items():
        if name.startswith("AWS_"):
            monkeypatch.setenv(name, value)
    monkeypatch.chdir(work)
    url = f"s3://{bucket}/releases-{os.getpid()}/scotus"
    assert main(["export", "scotus", "--out", url]) == 0
    assert "scotus release written to" in capsys.readouterr().out
    assert main(["export", "scotus", "--out", url]) == 0
    out = capsys.readouterr().out
    assert "scotus release unchanged" in out and "nothing uploaded" in out and "written to" not in out, out


def test_the_documented_bucket_command_makes_buckets_a_read_only_identity_cannot_write(s3_server, tmp_path):
    """docs/deploying.md, "The buckets, and who may read them": its command, run as written."""
    block = block_after("docs/deploying.md", "**The buckets, and who may read them.**")
    [command] = [line for line in block.splitlines() if line.strip()]
    (tmp_path / ".venv").symlink_to(Path(__file__).resolve().parents[2] / ".venv")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")}, **s3_server.env()}
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    made = {"caseforge-shards", "caseforge-mirror", "caseforge-releases"}
    assert made <= set(s3_server.filesystem().ls(""))
    reader = s3_server.filesystem(s3_server.ro)
    assert reader.ls("caseforge-mirror") == []
    with pytest.raises(PermissionError):
        reader.pipe("caseforge-mirror/x", b"no")


def test_the_documented_prefect_server_start_sends_no_telemetry(tmp_path):
    """docs/deploying.md, Deploying, step 1, run as written (host and port replaced by a free loopback one, the
    checkout's .venv), in an environment without any telemetry setting: the server's telemetry service stays off, so
    a server with no way out logs no `Failed to send telemetry`."""
    import httpx
    from s3_server import stop_process_group

    command = block_after("docs/deploying.md", "**1. Start the server**").splitlines()[0]
    port = free_port()
    command = command.replace("--host 0.0.0.0 --port 4200", f"--host 127.0.0.1 --port {port}")
    assert "prefect server start" in command and str(port) in command
    (tmp_path / ".venv").symlink_to(Path(__file__).resolve().parents[2] / ".venv")
    env = {k: v for k, v in os.environ.items() if "ANALYTICS" not in k and k not in ("DO_NOT_TRACK", "PREFECT_API_URL")}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    log = tmp_path / "server.log"
    server = subprocess.Popen(["bash", "-c", command], cwd=tmp_path, env=env, stdout=log.open("w"),
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while True:
            assert server.poll() is None, log.read_text()[-3000:]
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        settings = httpx.get(f"http://127.0.0.1:{port}/api/admin/settings", timeout=10).json()
        assert settings["server"]["analytics_enabled"] is False
        time.sleep(5)                       # the services' first round
    finally:
        stop_process_group(server, grace_s=20)
    assert "telemetry" not in log.read_text().lower(), log.read_text()[-3000:]
