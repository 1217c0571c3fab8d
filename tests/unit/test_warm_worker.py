"""The launcher of caseforge.runtime.warm_worker without a warm process: it becomes `python -m prefect.engine`, so a
worker whose warm process is not (or no longer) there runs flow runs cold, never drops them. The warm path itself
runs against a real server in tests/integration/test_llm_fanout_prefect.py."""
import os
import subprocess
import sys


def test_without_a_warm_process_the_launcher_is_prefects_engine(tmp_path):
    env = {**os.environ, "CASEFORGE_WARM_SOCKET": str(tmp_path / "absent.sock"), "PREFECT__FLOW_RUN_ID": "not-a-run"}
    done = subprocess.run([sys.executable, "-m", "caseforge.runtime.warm_worker", "launch"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "Invalid flow run id" in done.stdout + done.stderr       # prefect.engine's own first check
