"""`llm check` catches what `llm ping` catches, and both exit 2 (issue 41, item 2), against an in-memory
OpenAI-compatible server double: the backends the commands resolve from the settings are the real ones, given an
httpx transport instead of a socket."""
import asyncio
import json
import time

import httpx
import pytest

from caseforge.cli import main
from caseforge.llm.backends.openai_compat import OpenAIBackend
from caseforge.llm.check import PROBE_ANSWER

BASE = "http://gpu-box:8000/v1"


def chat(content: str | None, model: str) -> httpx.Response:
    return httpx.Response(200, json={"model": model, "usage": {"prompt_tokens": 9, "completion_tokens": 1},
                                     "choices": [{"message": {"content": content}, "finish_reason": "stop"}]})


def gemma_without_its_chat_format(request: httpx.Request) -> httpx.Response:
    """What llama_cpp.server does with Gemma and no --chat_format: a grammar (the JSON schema) still forces the
    schema's answer; free text comes back empty."""
    if request.url.path.endswith("/models"):
        return httpx.Response(200, json={"data": [{"id": "gemma-3-270m"}]})
    body = json.loads(request.content)
    constrained = "structured_outputs" in body or "response_format" in body
    return chat(json.dumps(PROBE_ANSWER) if constrained else "", body["model"])


@pytest.fixture
def served(monkeypatch, tmp_path):
    """Route the commands' backends to `served.handler`; `served.options` keeps the options each was made with."""
    for name in ("CASEFORGE_LLM_BACKEND", "CASEFORGE_LLM_MODEL", "CASEFORGE_CONFIG", "CASEFORGE_OPENAI_BASE_URL",
                 "CASEFORGE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)

    class Served:
        handler = staticmethod(gemma_without_its_chat_format)
        options: list[dict] = []

    def backend_for(choice):
        Served.options.append(dict(choice.options))
        return OpenAIBackend(choice.model, transport=httpx.MockTransport(Served.handler), **choice.options)

    monkeypatch.setattr("caseforge.cli.llm.backend_for", backend_for)
    monkeypatch.setattr("caseforge.llm.check.backend_for", backend_for)
    return Served


def caseforge_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("caseforge: ")]


def test_check_catches_a_model_that_writes_nothing_without_a_schema(served, tmp_path, capsys):
    (tmp_path / "caseforge.toml").write_text(
        f'[llm]\nbackend = "openai"\nmodel = "gemma-3-270m"\n[llm.backends.openai.options]\nbase_url = "{BASE}"\n'
        '[nightly.builders.casefacts]\nallow_same_family = true\n'
        '[nightly.evaluations.casegen]\nmodels = ["gemma-3-270m"]\nallow_same_family = true\n')
    assert main(["llm", "check"]) == 2
    [line] = caseforge_lines(capsys.readouterr().err)
    assert f"openai:gemma-3-270m at {BASE} answered a request without a schema" in line
    assert "empty content" in line and "--chat_format" in line


@pytest.mark.parametrize("answer, said", [
    (lambda request: httpx.Response(404, json={"error": "no route"}), "HTTP 404 (is base_url right?"),
    (lambda request: httpx.Response(401, json={"error": "bad key"}), "HTTP 401"),
    (lambda request: (_ for _ in ()).throw(httpx.ConnectError("Connection refused")), "connection problem"),
    (gemma_without_its_chat_format, "answered with empty content"),
])
def test_every_ping_failure_exits_2_in_one_line(served, capsys, answer, said):
    served.handler = staticmethod(answer)
    assert main(["llm", "ping", "--llm", "openai", "--model", "gemma-3-270m", "--base-url", BASE]) == 2
    [line] = caseforge_lines(capsys.readouterr().err)
    assert f"openai:gemma-3-270m at {BASE}" in line and said in line, line


def test_ping_and_check_take_the_timeout_flag_over_the_settings_file(served, tmp_path, capsys):
    async def hung(request):
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"data": [{"id": "m"}]})
        await asyncio.sleep(60)

    (tmp_path / "caseforge.toml").write_text(f'[llm.backends.openai.options]\nbase_url = "{BASE}"\ntimeout_s = 300\n')
    served.handler = staticmethod(hung)
    started = time.monotonic()
    assert main(["llm", "ping", "--llm", "openai", "--model", "m", "--timeout-s", "1"]) == 2
    assert time.monotonic() - started < 15 and served.options[-1]["timeout_s"] == 1.0
    assert "timed out" in capsys.readouterr().err
    # without the flag: the file's value, at most ping's own 30 s
    served.handler = staticmethod(lambda request: chat("ready", "m") if not request.url.path.endswith("/models")
                                  else httpx.Response(200, json={"data": [{"id": "m"}]}))
    assert main(["llm", "ping", "--llm", "openai", "--model", "m"]) == 0
    assert served.options[-1]["timeout_s"] == 30.0
