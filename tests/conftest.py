import os
from pathlib import Path

import pytest

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")

# Prefect configures logging when first imported, and that closes every logging handler created
# before it. absl (imported by rouge_score) makes one on the sys.stderr of that moment, which under
# pytest is the capture file: closed, it crashes the rest of the session. Import Prefect first.
import prefect.main  # noqa: E402,F401  (prefect.main is what sets logging up)


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


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "warehouse.duckdb"


def pytest_sessionfinish(session, exitstatus):
    """Prefect stops its temporary API server at interpreter exit and says so on the "prefect"
    logger, whose console handler may still hold a capture stream pytest has closed by then."""
    import logging

    logging.getLogger("prefect").disabled = True
