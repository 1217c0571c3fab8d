"""The nightly on real Oyez samples, twice in a row: the second run fetches nothing new, makes no
LLM call (no builder's inputs changed) and leaves the release byte-identical."""
from pathlib import Path

import pytest
from oyez_subset import link_oyez_subset
from pydantic import BaseModel

from dataclasses import dataclass
from typing import Callable

from caseforge.config import settings as load_settings
from caseforge.flows import nightly, registry
from caseforge.llm import LLMRequest, render, run_job
from caseforge.llm.types import Completion
from caseforge.release import validate_croissant, verify_release
from caseforge.runs import StageReport
from caseforge.warehouse import connect

pytestmark = [pytest.mark.samples, pytest.mark.slow]

PROMPTS = Path(__file__).resolve().parent.parent / "fixtures" / "prompts"
CASES_IN_SUBSET = 30
LEGACY_ROWS = 100


class Number(BaseModel):
    value: int


class EchoBackendDouble:
    """Test double of an LLM backend: answers each echo prompt with its number, counting calls."""

    name = "echo-double"
    model = "echo-double-model"
    batch_size = 16

    def __init__(self):
        self.calls = 0

    def complete_batch(self, requests):
        self.calls += len(requests)
        return [Completion(text='{"value": %s}' % r.key, prompt_tokens=5, completion_tokens=3) for r in requests]


def echo_builder(backend):
    """A builder double that runs a real cached LLM job (run_job) over curated.scotus_cases."""

    def run(settings, **options):
        con = connect(settings.db_path)
        try:
            ids = [row[0] for row in con.execute("SELECT case_id FROM curated.scotus_cases ORDER BY case_id").fetchall()]
            requests = []
            for case_id in ids:
                prompt = render("echo.j2", root=PROMPTS, n=case_id)
                requests.append(LLMRequest(key=str(case_id), messages=prompt.messages,
                                           template_id=prompt.template_id, template_sha=prompt.template_sha))
            job = run_job(con, "echo", backend, requests, Number)
        finally:
            con.close()
        report = StageReport(name="echo")
        report.add("items", len(job.outputs))
        report.add("cache_hits", job.cache_hits)
        report.add("backend_calls", job.backend_calls)
        return report

    return run


@dataclass(frozen=True)
class BuilderEntryDouble(registry.Builder):
    """Test double of a registry builder: a plain function instead of a Prefect flow."""
    builder: Callable = None

    def run(self, settings, **kwargs):
        return self.builder(settings, **kwargs)


@pytest.fixture
def samples_subset(samples_dir, tmp_path):
    """A samples tree: links to the first real Oyez case files, and the first real rows of the legacy table
    (the whole 2,999-row table through the gate three times would make this test slow)."""
    return link_oyez_subset(samples_dir, tmp_path / "samples", CASES_IN_SUBSET, LEGACY_ROWS)


def tree_bytes(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_nightly_twice_on_samples(samples_subset, tmp_path):
    backend = EchoBackendDouble()
    stages_of = {"sources": {"oyez": registry.SOURCES["oyez"]},
                 "builders": {"echo": BuilderEntryDouble("echo", "echo (double)", None, inputs=("curated.scotus_cases",),
                                                         builder=echo_builder(backend))},
                 "evaluations": {}, "releases": {"scotus": registry.RELEASES["scotus"]}}
    settings = load_settings(tmp_path / "cf.duckdb")
    options = nightly.NightlyOptions(from_samples=True, samples_dir=samples_subset, release_dir=tmp_path / "releases")

    first = nightly.run_nightly(settings, options, **stages_of)
    assert first.ok, first.failures()
    stages = {(o.stage, o.name): o for o in first.outcomes}
    assert stages[("source", "oyez")].counts["new"] == CASES_IN_SUBSET
    assert stages[("source", "oyez")].counts["new_payloads"] == CASES_IN_SUBSET + 1  # + the legacy table
    assert stages[("builder", "echo")].counts["llm_calls"] == CASES_IN_SUBSET == backend.calls
    release = tmp_path / "releases" / "scotus"
    assert verify_release(release) == [] and validate_croissant(release) == []
    released = tree_bytes(release)
    assert "30 upstream payloads" in released["README.md"].decode()
    assert "CC BY-NC" in released["README.md"].decode()
    assert (first.run_dir / "scotus_decades.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    second = nightly.run_nightly(settings, options, **stages_of)
    assert second.ok, second.failures()
    stages = {(o.stage, o.name): o for o in second.outcomes}
    oyez = stages[("source", "oyez")].counts
    assert (oyez["new_payloads"], oyez["new"], oyez["changed"]) == (0, 0, 0)
    assert stages[("builder", "echo")].status == "skipped"
    assert stages[("builder", "echo")].note == "inputs unchanged"
    assert stages[("export", "scotus")].status == "skipped"
    assert backend.calls == CASES_IN_SUBSET
    assert sum(o.counts.get("llm_calls", 0) for o in second.outcomes) == 0
    assert tree_bytes(release) == released

    # forcing the builders and the release: the LLM cache answers everything, the writer gives the same bytes
    forced = nightly.run_nightly(settings, nightly.NightlyOptions(
        from_samples=True, samples_dir=samples_subset, release_dir=tmp_path / "releases", force=True), **stages_of)
    stages = {(o.stage, o.name): o for o in forced.outcomes}
    assert stages[("builder", "echo")].counts["cache_hits"] == CASES_IN_SUBSET
    assert stages[("builder", "echo")].counts["llm_calls"] == 0 and backend.calls == CASES_IN_SUBSET
    assert stages[("export", "scotus")].status == "succeeded"
    assert tree_bytes(release) == released
