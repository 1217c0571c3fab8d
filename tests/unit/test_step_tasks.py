"""caseforge.flows.states.as_tasks: each step of a steps dataclass runs as a Prefect task run, its arguments handed
over quoted. Prefect walks every argument of a task run, element by element, to find futures and states to wait
on; a step's arguments are never those, but can be large: the replayed HUDOC folder's 25,000 files, walked twice
per call, took 3 s of a night at the real size (py-spy of bench/nightly_scale.py's 1% night)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from prefect.utilities.annotations import quote

from caseforge.flows import states


def _step(session, documents: dict, reparse: bool = False) -> int:
    return len(documents)


@dataclass(frozen=True)
class _Steps:
    documents: Callable = _step


class TaskDouble:
    """Test double of prefect.task: records the arguments each call hands to the task and runs the function
    on them unwrapped, as Prefect's engine does."""

    calls: list = []

    def __init__(self, **options):
        self.options = options

    def __call__(self, fn):
        def run(*args, **kwargs):
            TaskDouble.calls.append((self.options["name"], args, kwargs))
            unwrap = lambda v: v.unquote() if isinstance(v, quote) else v      # noqa: E731
            return fn(*map(unwrap, args), **{k: unwrap(v) for k, v in kwargs.items()})
        return run


def test_a_steps_arguments_reach_prefect_quoted_and_the_step_unquoted(monkeypatch):
    monkeypatch.setattr(states, "task", TaskDouble)
    TaskDouble.calls.clear()
    documents = {f"001-{n}": [f"html/001-{n}.html"] for n in range(25_000)}
    steps = states.as_tasks(_Steps(), "hudoc")
    assert steps.documents("session", documents, reparse=True) == 25_000
    [(name, args, kwargs)] = TaskDouble.calls
    assert name == "hudoc-documents"
    assert all(isinstance(a, quote) for a in args) and all(isinstance(v, quote) for v in kwargs.values())
    assert args[1].unquote() is documents
