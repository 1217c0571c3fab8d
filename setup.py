"""The design card keeps flows/ and tasks/ at the top level; they install as caseforge.flows and caseforge.tasks."""
from setuptools import find_packages, setup

MAPPED = {"caseforge.flows": "flows", "caseforge.tasks": "tasks"}

packages = find_packages(include=["caseforge", "caseforge.*"])
for name, folder in MAPPED.items():
    packages.append(name)
    packages += [f"{name}.{sub}" for sub in find_packages(folder)]

setup(packages=packages, package_dir={"caseforge": "caseforge", **MAPPED})
