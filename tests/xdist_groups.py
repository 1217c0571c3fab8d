"""Which pytest-xdist worker group a test belongs to (`make test` runs `-n N --dist loadgroup`).

Each worker is a process with its own session and module fixtures, so tests that share one are sent to one worker,
where it is set up once:
- a test that uses a session fixture that takes a minute or more to set up (the first of SHARED_SERVERS it uses,
  directly or through others: Label Studio's start, a deployed nightly on the Prefect server, three releases built)
  goes to that fixture's group, and so does every other test of its module (their module fixtures are its clients);
  the servers that start in seconds (SeaweedFS, the CLI's shared Prefect server) start once per worker instead, so
  that the modules using them spread over the workers;
- every other test of tests/integration and tests/bench goes to a group of its module (their module fixtures run
  whole commands: set up once, not once per worker);
- tests/unit and tests/samples are spread one by one.

pytest-xdist reads the group from the test's node id, which pytest 9.2 no longer lets it change
(pytest-dev/pytest-xdist#1386): requirements.lock pins pytest 9.1.1, and tests/integration/test_xdist_groups.py
fails if the groups stop reaching the workers."""
from __future__ import annotations

from collections import defaultdict

import pytest

SHARED_SERVERS = (("label_studio", "label-studio"), ("prefect_server", "prefect-server"),
                  ("harness_releases", "harness-releases"))
MODULE_GROUPED = ("tests/integration/", "tests/bench/")


def server_group(item) -> str | None:
    used = set(getattr(item, "fixturenames", ()))
    return next((name for fixture, name in SHARED_SERVERS if fixture in used), None)


def assign_groups(items) -> None:
    by_module = defaultdict(list)
    for item in items:
        by_module[item.nodeid.split("::", 1)[0]].append(item)
    for module, tests in by_module.items():
        servers = [server_group(item) for item in tests]
        named = next((group for group in servers if group is not None), None)
        for item, own in zip(tests, servers):
            if own is not None:
                group = own
            elif named is not None:
                group = named
            elif module.startswith(MODULE_GROUPED):
                group = f"module:{module}"
            else:
                continue
            item.add_marker(pytest.mark.xdist_group(group))
