"""`make run` and caseforge's exit status (issue 36): GNU make exits 2 whenever a recipe fails, whatever the
recipe's own status, so the recipe says caseforge's status in a line of its own (1: the nightly ran and reports
problems; 2: it could not run) instead of leaving a reader to take make's 2 for caseforge's."""
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
@pytest.mark.parametrize("code", [0, 1, 2, 130])
def test_make_run_says_caseforges_own_exit_status(tmp_path, code):
    fake = tmp_path / "bin"                     # a caseforge double that only exits with `code`
    fake.mkdir()
    (fake / "caseforge").write_text(f"#!/bin/sh\nexit {code}\n")
    (fake / "caseforge").chmod(0o755)
    done = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "-o", ".venv/.installed", "run",
                           f"BIN={fake}", f"SAMPLES={tmp_path}"], capture_output=True, text=True, timeout=60)
    said = [line for line in done.stderr.splitlines() if line.startswith("make run: ")]
    if code == 0:
        assert done.returncode == 0 and said == [], done.stderr
        return
    assert done.returncode == 2                 # make's only failure status, whatever caseforge's was
    assert len(said) == 1 and said[0].startswith(f"make run: caseforge exited {code}"), done.stderr
