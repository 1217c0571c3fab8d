"""The worker groups of tests/xdist_groups.py reach pytest-xdist's workers (`make test`'s `-n N --dist loadgroup`):
a small suite laid out as this one, run as `make test` runs the suite, on two workers. With pytest 9.2 the groups
were silently dropped (pytest-dev/pytest-xdist#1386): every worker started its own Label Studio, Prefect server and
whole-night module fixtures."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

CONFTEST = f'''
import sys
import pytest
sys.path.insert(0, {str(TESTS)!r})
from xdist_groups import assign_groups

@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    assign_groups(items)

@pytest.fixture(scope="session")
def prefect_server():
    return "a server"
'''

RECORD = '''
import json, os
def ran(name):
    with open(os.environ["WHERE"], "a") as out:
        out.write(json.dumps([name, os.environ["PYTEST_XDIST_WORKER"]]) + "\\n")
'''


def test_tests_that_share_a_server_or_a_module_run_on_one_worker(tmp_path):
    suite = tmp_path / "suite"
    (suite / "tests" / "integration").mkdir(parents=True)
    (suite / "tests" / "unit").mkdir()
    (suite / "tests" / "conftest.py").write_text(CONFTEST)
    (suite / "tests" / "record.py").write_text(RECORD)
    server_users = "".join(f"def test_server_{i}(prefect_server):\n    ran('server {i}')\n" for i in range(4))
    (suite / "tests" / "integration" / "test_server.py").write_text("from record import ran\n" + server_users)
    (suite / "tests" / "integration" / "test_uses_server_once.py").write_text(
        "from record import ran\ndef test_a(prefect_server):\n    ran('server 4')\n"
        "def test_b():\n    ran('server module')\n")
    module = "".join(f"def test_module_{i}():\n    ran('module')\n" for i in range(4))
    (suite / "tests" / "integration" / "test_module.py").write_text("from record import ran\n" + module)
    unit = "".join(f"def test_unit_{i}():\n    import time; time.sleep(0.2); ran('unit')\n" for i in range(8))
    (suite / "tests" / "unit" / "test_unit.py").write_text("from record import ran\n" + unit)
    where = tmp_path / "where.jsonl"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
                           "--dist", "loadgroup", "-o", "pythonpath=tests", "tests"], cwd=suite, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "WHERE": str(where)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workers: dict[str, set[str]] = {}
    for line in where.read_text().splitlines():
        name, worker = json.loads(line)
        workers.setdefault(name.split(" ")[0] if name.startswith("server") else name, set()).add(worker)
    assert len(workers["server"]) == 1, workers          # the server's tests, and the rest of a module that uses it
    assert len(workers["module"]) == 1, workers          # an integration module without a server: one worker
    assert len(workers["unit"]) == 2, workers            # unit tests spread over both
