"""The model that answered is the model recorded, and a run says what it cost (issue 41, item 1; issue 43, item 4),
with a real OpenAI-compatible server on loopback: llama_cpp.server serving the packaged SmolLM2 (and Gemma without
its chat format), behind a proxy that keeps the server's own token counts. The commands run as a user runs them
(child processes, the session's shared Prefect server), in a folder of their own."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from llama_server import UsageRecordingProxy, skip_without_llama_server, start_llama_server
from oyez_subset import link_oyez_subset
from s3_server import stop_process_group

from caseforge.release import card_rows
from caseforge.release.card import cost_section
from caseforge.tasks.casefacts import release as casefacts_release

pytestmark = [pytest.mark.samples, pytest.mark.slow]

QWEN = "Qwen/Qwen2.5-7B-Instruct"
SMOLLM = "smollm2-135m-instruct"            # the alias the server serves SmolLM2 under
NIGHTLY_ALLOWS = ('[nightly.builders.casefacts]\nallow_same_family = true\n'
                  '[nightly.evaluations.casegen]\nmodels = ["{model}"]\nallow_same_family = true\n')


def settings(base_url: str, model: str, served: str | None = None) -> str:
    return (f'[llm]\nbackend = "openai"\nmodel = "{model}"\n[llm.backends.openai.options]\nbase_url = "{base_url}"\n'
            f'structured = "llamacpp"\ntimeout_s = 300\n' + (f'served_model = "{served}"\n' if served else "")
            + NIGHTLY_ALLOWS.format(model=model))


@pytest.fixture(scope="module")
def served(tmp_path_factory, samples_dir, shared_server_cli_env):
    """SmolLM2 behind the usage-recording proxy, and a warehouse with one Oyez case, in a folder of its own."""
    skip_without_llama_server()
    work = tmp_path_factory.mktemp("served_model")
    subset = link_oyez_subset(samples_dir, work / "samples", cases=1, legacy_rows=20)
    env = {k: v for k, v in shared_server_cli_env.items()
           if not k.startswith(("CASEFORGE_LLM_", "CASEFORGE_OPENAI_", "CASEFORGE_CONFIG", "CASEFORGE_DB"))}
    process, base_url = start_llama_server(SMOLLM, work / "smollm.log", "--n_ctx", "4096", "--model_alias", SMOLLM)
    try:
        with UsageRecordingProxy(base_url) as proxy:
            done = run(work, env, "ingest", "oyez", "--from-dir", str(subset / "oyez" / "cases"))
            assert done.returncode == 0, done.stderr[-3000:]
            yield work, env, proxy
    finally:
        stop_process_group(process)


def run(work: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "caseforge", *args], cwd=work, env=env, capture_output=True,
                          text=True, timeout=1800)


def problem_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("caseforge: ")]


def test_a_model_served_under_another_name_is_refused_by_check_ping_and_build(served):
    work, env, proxy = served
    (work / "caseforge.toml").write_text(settings(proxy.base_url, QWEN))
    for command in (["llm", "check"], ["llm", "ping"], ["build", "casefacts", "--limit", "1", "--allow-same-family"]):
        done = run(work, env, *command)
        context = f"{command}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        assert done.returncode == 2, context
        [line] = problem_lines(done.stderr)
        assert f"'{QWEN}'" in line and f"'{SMOLLM}'" in line and proxy.base_url in line, context
        assert "crashed" not in done.stderr, context
    with duckdb.connect(str(work / "data" / "caseforge.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM ops.llm_calls").fetchone() == (0,)
    assert proxy.usages == []                    # nothing was even sent


def test_the_served_name_declared_caches_answers_with_the_model_that_served_and_their_cost(served):
    work, env, proxy = served
    (work / "caseforge.toml").write_text(settings(proxy.base_url, "HuggingFaceTB/SmolLM2-135M-Instruct", SMOLLM))
    proxy.usages.clear()
    done = run(work, env, "build", "casefacts", "--limit", "1", "--allow-same-family")
    assert done.returncode in (0, 1), done.stderr[-3000:]         # 1: the gates refused the small model's writing
    answers, prompt_tokens, completion_tokens = proxy.totals()
    assert answers > 0
    with duckdb.connect(str(work / "data" / "caseforge.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT DISTINCT model, served_model FROM ops.llm_calls WHERE status <> 'unanswered'"
                           ).fetchall()
        [(run_id,)] = con.execute("SELECT max(run_id) FROM ops.runs WHERE kind = 'build'").fetchall()   # this one
    assert rows == [("HuggingFaceTB/SmolLM2-135M-Instruct", SMOLLM)]

    stats = run(work, env, "llm", "stats", "--format", "json")
    assert stats.returncode == 0, stats.stderr[-2000:]
    assert {(r["model"], r["served_model"]) for r in json.loads(stats.stdout)} == set(rows)
    cost = run(work, env, "llm", "stats", "--run", str(run_id), "--format", "json")
    assert cost.returncode == 0, cost.stderr[-2000:]
    recorded = json.loads(cost.stdout)
    # what caseforge recorded is what the server counted
    assert sum(r["prompt_tokens"] for r in recorded) == prompt_tokens
    assert sum(r["completion_tokens"] for r in recorded) == completion_tokens
    assert f"{prompt_tokens:,} prompt + {completion_tokens:,} completion tokens" in cost.stderr

    with duckdb.connect(str(work / "data" / "caseforge.duckdb"), read_only=True) as con:
        claims = con.execute("SELECT count(*) FROM curated.casefacts_claims").fetchone()[0]
        stages = card_rows(con, "casefacts/build_steps.sql")
        section = "\n".join(cost_section(casefacts_release.llm_cost(con, stages), max(claims, 1)))
    if claims:                # the small model kept a claim: the card of the release itself
        export = run(work, env, "export", "casefacts", "--out", str(work / "release"))
        assert export.returncode == 0, export.stderr[-2000:]
        card = (work / "release" / "README.md").read_text()
        assert section.split("Altogether")[0] in card
    else:                     # it kept none (no release can be written): the card's section, as it would say it
        card = section
    assert f"{prompt_tokens:,} prompt and {completion_tokens:,} completion tokens" in card
    assert f"| {SMOLLM} |" in card


def test_gemma_served_without_its_chat_format_fails_llm_check_in_one_line(tmp_path, shared_server_cli_env):
    skip_without_llama_server()
    env = {k: v for k, v in shared_server_cli_env.items()
           if not k.startswith(("CASEFORGE_LLM_", "CASEFORGE_OPENAI_", "CASEFORGE_CONFIG", "CASEFORGE_DB"))}
    process, base_url = start_llama_server("gemma-3-270m", tmp_path / "gemma.log", "--n_ctx", "2048",
                                           "--model_alias", "gemma-3-270m")
    try:
        (tmp_path / "caseforge.toml").write_text(settings(base_url, "gemma-3-270m"))
        done = run(tmp_path, env, "llm", "check")
    finally:
        stop_process_group(process)
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-3000:]
    [line] = problem_lines(done.stderr)
    assert "answered a request without a schema" in line and "empty content" in line, line
