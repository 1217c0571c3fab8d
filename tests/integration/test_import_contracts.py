"""import-linter's contracts (pyproject.toml, [tool.importlinter]) checked as README "Layout" says:
`.venv/bin/lint-imports` from the root of a clone (issue 40: it failed there with "Missing layer in container
'caseforge': module caseforge.flows does not exist", since only a test's copy of the tree laid cli/, flows/ and
tasks/ inside caseforge/; they are now linked there, as they are installed). The root is a copy of the clone's
files the command reads, its links kept as links; planted imports then show that the floors, the core's own floors
and the ban on circles each break the contracts."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# README "Layout": the command, as the page shows it
DOCUMENTED = re.search(r"from the root of a clone, after `make setup`:\n\n```bash\n(?P<command>[^\n]+)\n```",
                       (ROOT / "README.md").read_text())["command"]


def clone_root(tmp_path: Path) -> Path:
    """What a fresh clone holds that lint-imports reads: pyproject.toml and the package's folders, caseforge/'s links
    to cli/, flows/, runtime/ and tasks/ copied as the links they are; and the .venv `make setup` makes (this one's)."""
    for name in ("caseforge", "cli", "flows", "runtime", "tasks"):
        shutil.copytree(ROOT / name, tmp_path / name, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    assert (tmp_path / "caseforge" / "flows").is_symlink()
    return tmp_path


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """The documented command, run as written at the root (no PYTHONPATH)."""
    return subprocess.run(["bash", "-c", DOCUMENTED], cwd=root, capture_output=True, text=True, timeout=240,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(root)})


def plant(root: Path, module: str, line: str) -> None:
    with (root / module).open("a") as source:
        source.write(f"\n{line}  # noqa: E402  (planted)\n")


def test_lint_imports_from_the_root_keeps_the_contracts(tmp_path):
    assert DOCUMENTED == ".venv/bin/lint-imports"
    done = lint_imports(clone_root(tmp_path))
    assert done.returncode == 0 and "Contracts: 2 kept, 0 broken." in done.stdout, done.stdout[-4000:] + done.stderr
    assert "caseforge.flows does not exist" not in done.stdout + done.stderr


def test_an_import_against_the_floors_breaks_them(tmp_path):
    """Upward between the top floors (a task importing a flow) and inside the core (the settings, on the floor
    under the warehouse, importing it): each breaks the layers contract, the import named."""
    root = clone_root(tmp_path / "upward")
    plant(root, "tasks/oyez/parse.py", "from caseforge.flows import registry")
    upward = lint_imports(root)
    assert upward.returncode == 1 and "caseforge.tasks.oyez.parse -> caseforge.flows.registry" in upward.stdout, \
        upward.stdout[-4000:]
    root = clone_root(tmp_path / "core")
    plant(root, "caseforge/settings_tables.py", "from caseforge.warehouse import statements")
    core = lint_imports(root)
    assert core.returncode == 1 and "caseforge.settings_tables -> caseforge.warehouse.statements" in core.stdout, \
        core.stdout[-4000:]
    root = clone_root(tmp_path / "beside")
    plant(root, "runtime/zombie_runs.py", "from caseforge.tasks.oyez import parse")
    beside = lint_imports(root)                 # runtime/ and tasks/ stand side by side: neither imports the other
    assert beside.returncode == 1 and "caseforge.runtime.zombie_runs -> caseforge.tasks.oyez.parse" in beside.stdout, \
        beside.stdout[-4000:]
    root = clone_root(tmp_path / "siblings")
    plant(root, "caseforge/release/__init__.py", "from caseforge.llm import types")
    siblings = lint_imports(root)               # release and llm share a floor whose modules import none of each other
    assert siblings.returncode == 1 and "caseforge.release -> caseforge.llm.types" in siblings.stdout, \
        siblings.stdout[-4000:]


def test_a_circle_breaks_the_contracts(tmp_path):
    root = clone_root(tmp_path)
    plant(root, "caseforge/atomic.py", "from caseforge import processes")
    plant(root, "caseforge/processes.py", "from caseforge import atomic")
    circle = lint_imports(root)
    assert circle.returncode == 1 and "No import circles" in circle.stdout and "BROKEN" in circle.stdout
    assert ".processes -> .atomic" in circle.stdout or ".atomic -> .processes" in circle.stdout, circle.stdout[-4000:]
