"""Top-level folders install as subpackages of caseforge, one floor each (arrows point down):
cli/ → caseforge.cli (the command line), flows/ → caseforge.flows (Prefect flows, the registry, the
nightly), runtime/ → caseforge.runtime (Prefect's servers, their set-up, the warm worker) beside tasks/ →
caseforge.tasks (sources' and benchmarks' plain steps), and caseforge/ itself is the core they all use.
caseforge/cli, caseforge/flows, caseforge/runtime and caseforge/tasks are symbolic links to those folders, so the
package is laid out on disk as it is installed: Python, setuptools and import-linter (`lint-imports`, run from the
root) all find them inside caseforge/."""
from setuptools import find_packages, setup

setup(packages=find_packages(include=["caseforge", "caseforge.*"]))
