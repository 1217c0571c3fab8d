"""The nightly on real samples (Oyez, HUDOC, the case-law guide), twice in a row: the second run fetches
nothing new, skips every builder and release (no input changed), makes no LLM call, leaves the release
byte-identical, and its summary says nothing was rebuilt. Each run publishes the Parquet mirror to a real
S3-compatible server ([mirror] publish): a reader elsewhere with only read credentials answers from it
(`caseforge sql --mirror`), and the second run uploads no curated file."""
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from oyez_subset import link_oyez_subset
from prefect.client.orchestration import get_client
from pydantic import BaseModel

from dataclasses import dataclass
from typing import Callable

from caseforge.flows import nightly_runner, registry
from caseforge.llm import LLMRequest, render, run_job
from caseforge.llm.types import Completion
from caseforge.release import validate_croissant, verify_release
from caseforge.settings import load_settings
from caseforge.stage_report import StageReport
from caseforge.warehouse.connection import connect

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


class CallCountingBuilderDouble:
    """Test double of a builder that needs no model: counts its runs."""

    def __init__(self, name: str):
        self.name, self.runs = name, 0

    def __call__(self, settings, **options):
        self.runs += 1
        return StageReport(name=self.name)


@pytest.fixture
def samples_subset(samples_dir, tmp_path):
    """A samples tree: links to the first real Oyez case files, and the first real rows of the legacy table
    (the whole 2,999-row table through the gate three times would make this test slow), and the real HUDOC
    and guide samples (what the AQuAECHR builder reads)."""
    root = link_oyez_subset(samples_dir, tmp_path / "samples", CASES_IN_SUBSET, LEGACY_ROWS)
    for source in ("hudoc", "echr_guides"):
        (root / source).symlink_to(samples_dir / source)
    return root


def tree_bytes(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def published_objects(s3_server, url: str) -> dict[str, str]:
    """Every object under the store URL -> its ETag and time (an object written again lists differently)."""
    root = url.split("://", 1)[1]
    return {info["name"][len(root) + 1:]: info.get("ETag", "") + str(info.get("LastModified"))
            for info in s3_server.filesystem().find(root, detail=True).values()}


def test_nightly_twice_on_samples(samples_subset, tmp_path, s3_env, monkeypatch):
    mirror_url = f"s3://{s3_env.bucket}/nightly-{uuid.uuid4().hex[:8]}"
    (tmp_path / "caseforge.toml").write_text(f'[mirror]\npublish = "{mirror_url}"\n')
    monkeypatch.setenv("CASEFORGE_CONFIG", str(tmp_path / "caseforge.toml"))
    backend = EchoBackendDouble()
    aquaechr = CallCountingBuilderDouble("aquaechr")          # reads what the real AQuAECHR builder reads
    stages_of = {"sources": {name: registry.SOURCES[name] for name in ("oyez", "hudoc", "guides")},
                 "builders": {"echo": BuilderEntryDouble("echo", "echo (double)", None, inputs=("curated.scotus_cases",),
                                                         builder=echo_builder(backend)),
                              "aquaechr": BuilderEntryDouble("aquaechr", "aquaechr (double)", None,
                                                             inputs=registry.BUILDERS["aquaechr"].inputs,
                                                             builder=aquaechr)},
                 "evaluations": {}, "releases": {"scotus": registry.RELEASES["scotus"]}}
    settings = load_settings(tmp_path / "cf.duckdb")
    options = nightly_runner.NightlyOptions(from_samples=True, samples_dir=samples_subset, release_dir=tmp_path / "releases")

    # Prefect's temporary server up before three source threads need it: threads that each find none start one
    # apiece (Prefect 3.8.8's SubprocessASGIServer.start is not thread-safe), and on a busy machine all time out
    with get_client(sync_client=True) as client:
        client.api_healthcheck()
    first = nightly_runner.run_nightly(settings, options, **stages_of)
    assert first.ok, first.failures()
    stages = {(o.stage, o.name): o for o in first.outcomes}
    assert stages[("source", "oyez")].counts["new"] == CASES_IN_SUBSET
    assert stages[("source", "oyez")].counts["new_payloads"] == CASES_IN_SUBSET + 1  # + the legacy table
    assert stages[("builder", "echo")].counts["llm_calls"] == CASES_IN_SUBSET == backend.calls
    assert stages[("builder", "aquaechr")].status == "succeeded" and aquaechr.runs == 1
    release = tmp_path / "releases" / "scotus"
    assert verify_release(release) == [] and validate_croissant(release) == []
    released = tree_bytes(release)
    assert "30 upstream payloads" in released["README.md"].decode()
    assert "CC BY-NC" in released["README.md"].decode()
    assert (first.run_dir / "scotus_decades.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (first.outcomes[-1].stage, first.outcomes[-1].status) == ("publish", "succeeded"), first.outcomes[-1]
    published = published_objects(s3_env, mirror_url)
    laptop = tmp_path / "laptop"                    # another working directory, the read-only identity only
    laptop.mkdir()
    reader = subprocess.run(
        [sys.executable, "-m", "caseforge", "sql", "--mirror", mirror_url, "--format", "json",
         "SELECT (SELECT count(*) FROM curated.scotus_cases) AS cases, (SELECT count(*) FROM curated.echr_paragraphs) "
         "AS paragraphs"], cwd=laptop, capture_output=True, text=True, timeout=180,
        env={**{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CASEFORGE_"))},
             **s3_env.env(s3_env.ro)})
    assert reader.returncode == 0, reader.stderr
    with connect(settings.db_path) as con:
        paragraphs = con.execute("SELECT count(*) FROM curated.echr_paragraphs").fetchone()[0]
    assert json.loads(reader.stdout) == [{"cases": CASES_IN_SUBSET, "paragraphs": paragraphs}] and paragraphs

    second = nightly_runner.run_nightly(settings, options, **stages_of)
    assert second.ok, second.failures()
    for source in second.outcomes[:3]:
        assert source.stage == "source" and source.status == "succeeded", source
        assert (source.counts["new_payloads"], source.counts["new"], source.counts["changed"]) == (0, 0, 0), source
    # the guides were resolved against the judgments HUDOC loaded the first night: nothing to parse again
    guides = {(o.stage, o.name): o for o in second.outcomes}[("source", "guides")].counts
    assert guides.get("guides_parsed", 0) == 0 and guides["guide_paragraphs_unchanged"] > 0, guides
    rebuilt = {(o.stage, o.name): (o.status, o.note) for o in second.outcomes
               if o.stage not in ("source", "source health", "publish")}
    assert rebuilt == {("builder", "echo"): ("skipped", "inputs unchanged"),
                       ("builder", "aquaechr"): ("skipped", "inputs unchanged"),
                       ("export", "scotus"): ("skipped", "inputs unchanged")}
    assert backend.calls == CASES_IN_SUBSET and aquaechr.runs == 1
    assert sum(o.counts.get("llm_calls", 0) for o in second.outcomes) == 0
    assert tree_bytes(release) == released
    summary = (second.run_dir / "summary.md").read_text()
    assert summary.startswith(f"# Nightly run {second.run_id}: all stages ok, nothing rebuilt (no builder, "
                              "evaluation or release had a changed input)"), summary[:300]
    assert (settings.runs_dir / "latest").resolve() == second.run_dir.resolve()
    assert (second.outcomes[-1].stage, second.outcomes[-1].status) == ("publish", "succeeded"), second.outcomes[-1]
    republished = published_objects(s3_env, mirror_url)
    written = sorted(name for name in republished if published.get(name) != republished[name])
    uploaded = [name for name in written if name.startswith("data/")]
    assert uploaded and all(name.startswith("data/ops/") for name in uploaded), written   # only tonight's run records
    assert sorted(set(written) - set(uploaded)) == ["current.json", "generations/00000002.json"], written

    # forcing the builders and the release: the LLM cache answers everything, the writer gives the same bytes
    forced = nightly_runner.run_nightly(settings, nightly_runner.NightlyOptions(
        from_samples=True, samples_dir=samples_subset, release_dir=tmp_path / "releases", sources=["oyez"],
        force=True), **stages_of)
    stages = {(o.stage, o.name): o for o in forced.outcomes}
    assert stages[("builder", "echo")].counts["cache_hits"] == CASES_IN_SUBSET
    assert stages[("builder", "echo")].counts["llm_calls"] == 0 and backend.calls == CASES_IN_SUBSET
    assert stages[("export", "scotus")].status == "succeeded"
    assert tree_bytes(release) == released
