"""What a person reads at the terminal after `caseforge run nightly` (a real process, Prefect's temporary
server): each problem once (not in Prefect's task error line, the stage table and a `caseforge:` line each),
a stage table with a header row, the problems in a table of their own beside the values that broke their
rules, and one `caseforge:` line (issue 36, "say each thing once")."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nightly_problem_doubles import DEGENERATE_CLAIMS

pytestmark = pytest.mark.slow
TESTS = Path(__file__).resolve().parents[1]

DRIVER = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
import caseforge.flows.nightly as nightly
from nightly_problem_doubles import registries

real = nightly.run_nightly


def with_doubles(settings, options=None, **kwargs):       # the registry's stages replaced by doubles
    return real(settings, options, **{**kwargs, **registries(Path(sys.argv[2]))})


nightly.run_nightly = with_doubles
from caseforge.cli import main
sys.exit(main(["run", "nightly", "--db", sys.argv[1], "--release-dir", sys.argv[2] + "/rel"]))
"""


def test_each_problem_is_said_once_under_a_header(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(tmp_path / "prefect")
    done = subprocess.run([sys.executable, "-c", DRIVER, str(tmp_path / "cf.duckdb"), str(tmp_path), str(TESTS)],
                          capture_output=True, text=True, timeout=600, env=env)
    said = done.stdout + done.stderr
    assert done.returncode == 1, said[-4000:]
    for key in DEGENERATE_CLAIMS:
        assert said.count(key) == 1, said[-6000:]
    assert '"statement123456789"' in done.stdout                    # the value quoted beside its rule
    headers = [line for line in done.stdout.splitlines() if line.startswith("stage ")]
    assert len(headers) == 2 and all("| name" in line or "| record" in line for line in headers), done.stdout
    reasons = [line for line in done.stderr.splitlines() if line.startswith("caseforge: ")]
    assert reasons == ["caseforge: nightly 1: 1 stage(s) failed (builder claims), 2 problem(s), listed above"], reasons
