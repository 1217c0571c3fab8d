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
