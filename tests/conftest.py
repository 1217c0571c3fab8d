import os
from pathlib import Path

import pytest

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


def _samples_path() -> Path:
    default = Path(__file__).resolve().parent.parent.parent / "shared" / "samples"
    return Path(os.environ.get("CASEFORGE_SAMPLES", str(default)))


@pytest.fixture(scope="session")
def samples_dir() -> Path:
    """The real samples folder (CASEFORGE_SAMPLES, default ../shared/samples); skips when absent."""
    path = _samples_path()
    if not path.is_dir():
        pytest.skip(f"real samples not found at {path} (set CASEFORGE_SAMPLES)")
    return path


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "warehouse.duckdb"


def pytest_sessionfinish(session, exitstatus):
    """Prefect stops its temporary API server at interpreter exit and says so on the "prefect"
    logger, whose console handler may still hold a capture stream pytest has closed by then."""
    import logging

    logging.getLogger("prefect").disabled = True
