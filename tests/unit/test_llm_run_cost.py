"""What a run cost (issue 43, item 4): the LLM calls a run asks are recorded with it; its counts, `llm stats --run`
and a nightly's totals say calls, tokens and model seconds; cache hits cost nothing. The endpoint is an in-memory
OpenAI-compatible double (an httpx transport) that states its own token counts."""
import json
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from echo_prompts import Number, requests_for  # noqa: E402

from caseforge.cli import main  # noqa: E402
from caseforge.llm import run_job  # noqa: E402
from caseforge.llm.backends.openai_compat import OpenAIBackend  # noqa: E402
from caseforge.run_record import working_in  # noqa: E402
from caseforge.session import run_session  # noqa: E402
from caseforge.settings import load_settings  # noqa: E402
from caseforge.warehouse.connection import connect  # noqa: E402


class TokenCountingServerDouble:
    """Serves "m"; each answer's usage is its own count (prompt: the number asked + 10, completion: 3), summed
    here as the server's own record."""

    def __init__(self):
        self.prompt_tokens = self.completion_tokens = 0

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": [{"id": "m"}]})
        body = json.loads(request.content)
        number = int(body["messages"][-1]["content"].split("number ")[1].split(" ")[0])
        self.prompt_tokens += number + 10
        self.completion_tokens += 3
        return httpx.Response(200, json={
            "model": "m", "usage": {"prompt_tokens": number + 10, "completion_tokens": 3},
            "choices": [{"message": {"content": json.dumps({"value": number})}, "finish_reason": "stop"}]})


def backend(server) -> OpenAIBackend:
    return OpenAIBackend("m", base_url="http://gpu-box:8000/v1", transport=httpx.MockTransport(server.handle))


def test_a_runs_calls_are_its_cost_and_cache_hits_cost_nothing(tmp_path, capsys):
    settings = load_settings(tmp_path / "cf.duckdb")
    server = TokenCountingServerDouble()
    with working_in(99):                 # as the nightly does: the runs inside record it as their parent
        with run_session(settings, "build", "casefacts") as first:
            run_job(first.con, "casefacts.generate", backend(server), requests_for(range(4)), Number)
            first.report.add("new", 2)
    assert (first.report.counts["llm_asked"], first.report.counts["llm_prompt_tokens"],
            first.report.counts["llm_completion_tokens"]) == (4, server.prompt_tokens, server.completion_tokens)
    assert first.report.counts["llm_model_ms"] >= 0
    with run_session(settings, "build", "casefacts") as second:   # the same requests: answered from the cache
        again = run_job(second.con, "casefacts.generate", backend(server), requests_for(range(4)), Number)
    assert again.cache_hits == 4 and "llm_asked" not in second.report.counts

    con = connect(settings.db_path)
    runs = con.execute("SELECT run_id, parent_run_id, counts FROM ops.runs ORDER BY run_id").fetchall()
    con.close()
    assert [(r[1], json.loads(r[2]).get("llm_prompt_tokens")) for r in runs] == [(99, 46), (None, None)]
    assert main(["llm", "stats", "--db", str(settings.db_path), "--run", str(first.run_id), "--format", "json"]) == 0
    captured = capsys.readouterr()
    [row] = json.loads(captured.out)
    assert (row["step"], row["served_model"], row["calls"], row["prompt_tokens"], row["completion_tokens"]) == (
        "casefacts.generate", "m", 4, server.prompt_tokens, server.completion_tokens)
    assert "2 item(s) kept: 29 tokens" in captured.err        # (46 + 12) / 2
    assert main(["llm", "stats", "--db", str(settings.db_path), "--run", "7"]) == 2


def test_a_nights_cost_is_its_stages_runs_in_the_summary_status_and_llm_stats(tmp_path, capsys):
    """A nightly whose one builder asks four LLM calls: the stage's counts, the night's totals, summary.md's cost
    section, `status --format json` and `llm stats --run <nightly>` all say what the server counted."""
    from registry_doubles import BuilderDouble, SourceDouble

    from caseforge.cli.status import status_data
    from caseforge.flows.nightly_runner import NightlyOptions, run_nightly
    from caseforge.stage_report import StageReport

    settings = load_settings(tmp_path / "cf.duckdb")
    server = TokenCountingServerDouble()

    def source(settings, **kwargs):
        con = connect(settings.db_path)
        con.execute("CREATE TABLE IF NOT EXISTS curated.alpha (id INTEGER)")
        con.execute("INSERT INTO curated.alpha VALUES (1), (2)")
        con.close()
        return StageReport(name="alpha", counts={"new": 2})

    def builder(settings, **options):
        with run_session(settings, "build", "double") as session:
            run_job(session.con, "double.generate", backend(server), requests_for(range(4)), Number)
            session.report.add("new", 2)
        return session.report

    result = run_nightly(
        settings, NightlyOptions(sources=["alpha"], release_dir=tmp_path / "releases"),
        sources={"alpha": SourceDouble("alpha", "alpha (double)", None, archive_source="alpha", refresh=source)},
        builders={"double": BuilderDouble("double", "double (double)", None, inputs=("curated.alpha",), nightly=True,
                                          builder=builder)},
        evaluations={}, releases={}, plots={})
    [stage] = [o for o in result.outcomes if o.stage == "builder"]
    row = stage.summary_row()
    assert (row["prompt_tokens"], row["completion_tokens"], row["tokens_per_kept"]) == (46, 12, 29)
    summary = (result.run_dir / "summary.md").read_text()
    assert "## What the night's LLM calls cost" in summary and "| double.generate | m | m | 4 | 46 | 12 |" in summary

    con = connect(settings.db_path)
    try:
        nightly, builder_run = con.execute(
            "SELECT n.run_id, b.run_id FROM ops.runs n JOIN ops.runs b ON b.parent_run_id = n.run_id "
            "WHERE n.kind = 'nightly' AND b.kind = 'build'").fetchone()
        status = status_data(con, 10)
    finally:
        con.close()
    night = next(r for r in status["runs"] if r["run_id"] == nightly)
    assert (night["counts"]["llm_prompt_tokens"], night["counts"]["llm_completion_tokens"]) == (46, 12)
    assert next(s for s in status["last_nightly_stages"] if s["stage"] == "builder")["counts"]["llm_asked"] == 4
    assert main(["llm", "stats", "--db", str(settings.db_path), "--run", str(nightly), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert [(r["run_id"], r["prompt_tokens"]) for r in json.loads(captured.out)] == [(builder_run, 46)]
    assert "2 item(s) kept" in captured.err
