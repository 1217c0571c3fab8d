import os
from pathlib import Path

import pytest

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
# A command run by a test (in-process or as a child process) uses Prefect's temporary server, which ends with it,
# not the shared local server that outlives commands (caseforge.runtime.local_server). Two opt back in, each with a
# PREFECT_HOME of its own that is stopped at the end: tests/integration/test_local_server_processes.py (one per
# test) and the `shared_server_cli_env` fixture below (one per session); _no_local_server_left is the safety net.
os.environ["CASEFORGE_PREFECT_SERVER"] = "ephemeral"

# Prefect configures logging when first imported, and that closes every logging handler created
# before it. absl (imported by rouge_score) makes one on the sys.stderr of that moment, which under
# pytest is the capture file: closed, it crashes the rest of the session. Import Prefect first.
import prefect.main  # noqa: E402,F401  (prefect.main is what sets logging up)
from xdist_groups import assign_groups  # noqa: E402


def _samples_path() -> Path:
    default = Path(__file__).resolve().parent.parent.parent / "shared" / "samples"
    return Path(os.environ.get("CASEFORGE_SAMPLES", str(default)))


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    """The real samples folder (CASEFORGE_SAMPLES, default ../shared/samples); skips when absent, except
    under CI (CI=true), which has the folder: there a missing folder fails instead of hiding tests."""
    path = _samples_path()
    if not path.is_dir():
        message = f"real samples not found at {path} (set CASEFORGE_SAMPLES)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message + "; CI must run the sample tests", pytrace=False)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def shared_server_cli_env(tmp_path_factory):
    """Environment for tests that run `caseforge` as a child process: the commands share one local Prefect
    server (as a user's commands do) in a PREFECT_HOME of this session, instead of each starting Prefect's
    temporary server (about 8 s a command here). The server is stopped when the session ends."""
    import subprocess
    import sys

    from caseforge.runtime import local_server

    home = tmp_path_factory.mktemp("cli_prefect_home")
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", local_server.URL_ENV)}
    env.update(PREFECT_HOME=str(home), **{local_server.MODE_ENV: "local", local_server.IDLE_ENV: "600"})
    yield env
    subprocess.run([sys.executable, "-m", "caseforge", "server", "stop", "--force"], env=env, capture_output=True,
                   timeout=120)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "warehouse.duckdb"


def pytest_addoption(parser):
    parser.addoption("--require-free-disk", metavar="GB", type=float, default=None,
                     help="stop at once, in one line, unless the disk of the temporary folder has GB free "
                          "(make test: the whole suite's need, tests/disk_room.py)")


def pytest_sessionstart(session):
    from disk_room import shortfall, temporary_root

    need = session.config.getoption("require_free_disk")
    if need is None or hasattr(session.config, "workerinput"):      # the xdist controller checks, once
        return
    reason = shortfall(temporary_root(session.config.getoption("basetemp")), need)
    if reason:
        pytest.exit(reason, returncode=1)


@pytest.hookimpl(tryfirst=True)        # before pytest-xdist's own hook, which reads the groups (tests/xdist_groups.py)
def pytest_collection_modifyitems(config, items):
    assign_groups(items)


def pytest_sessionfinish(session, exitstatus):
    """Prefect stops its temporary API server at interpreter exit and says so on the "prefect"
    logger, whose console handler may still hold a capture stream pytest has closed by then."""
    import logging

    logging.getLogger("prefect").disabled = True
    _no_local_server_left(session)


def _no_local_server_left(session) -> None:
    """A safety net under the tests' own clean-up: a local Prefect server (caseforge.runtime.local_server) whose
    PREFECT_HOME is under this session's temporary folder is killed, and the session fails naming it."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    proc = Path("/proc")
    if factory is None or not proc.is_dir():
        return
    try:
        base = str(factory.getbasetemp().resolve()).encode()
    except (OSError, ValueError):
        return
    left = []
    for entry in proc.iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0") if entry.name.isdigit() else []
        except OSError:
            continue
        if b"caseforge.runtime.local_server" in cmdline and any(arg.startswith(base) for arg in cmdline):
            left.append(int(entry.name))
    for pid in left:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    if left:
        print(f"\nlocal Prefect servers left running by the tests (killed): {left}")
        session.exitstatus = 1


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real S3-compatible server (SeaweedFS) on loopback for the whole session, with the bucket
    `caseforge-test`, a read-write and a read-only identity (tests/s3_server.py)."""
    from s3_server import S3Server

    with S3Server(tmp_path_factory.mktemp("seaweedfs")) as server:
        yield server


@pytest.fixture
def s3_env(s3_server, monkeypatch):
    """This process reaches `s3_server` with its read-write identity, the standard AWS way (environment)."""
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    return s3_server
