"""Top-level folders install as subpackages of caseforge, one floor each (arrows point down):
cli/ → caseforge.cli (the command line), flows/ → caseforge.flows (Prefect flows, the registry, the
nightly), runtime/ → caseforge.runtime (Prefect's servers, their set-up, the warm worker) beside tasks/ →
caseforge.tasks (sources' and benchmarks' plain steps), and caseforge/ itself is the core they all use."""
from setuptools import find_packages, setup

MAPPED = {"caseforge.cli": "cli", "caseforge.flows": "flows", "caseforge.runtime": "runtime",
          "caseforge.tasks": "tasks"}

packages = find_packages(include=["caseforge", "caseforge.*"])
for name, folder in MAPPED.items():
    packages.append(name)
    packages += [f"{name}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir={"caseforge": "caseforge", **MAPPED})
