"""The job runner around any backend: cache, retries, failures, resume, replay."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from echo_prompts import Number, requests_for  # noqa: E402

from caseforge.llm import SamplingParams, render, run_job  # noqa: E402
from caseforge.llm.backends.replay import ReplayBackend, ReplayMiss, export_replay  # noqa: E402
from caseforge.llm.types import Completion  # noqa: E402
from caseforge.warehouse.connection import connect  # noqa: E402


class ScriptedBackendDouble:
    """Test double: answers from a script function and counts what it was asked."""

    name = "scripted-double"

    def __init__(self, answer, batch_size=4, model="double-model"):
        self.answer = answer
        self.batch_size = batch_size
        self.model = model
        self.asked: list[str] = []

    def complete_batch(self, requests):
        out = []
        for request in requests:
            self.asked.append(request.key)
            out.append(Completion(text=self.answer(request, self.asked.count(request.key)), prompt_tokens=3,
                                  completion_tokens=2))
        return out



def echo(request, times_asked):
    n = int(request.key[1:])
    return f'Sure! ```json\n{{"value": {n}}}\n```'


def test_outputs_are_parsed_and_second_run_is_all_cache(db_path):
    con = connect(db_path)
    backend = ScriptedBackendDouble(echo)
    first = run_job(con, "echo", backend, requests_for(range(10)), Number)
    assert {k: v.value for k, v in first.outputs.items()} == {f"n{i}": i for i in range(10)}
    assert first.backend_calls == 10 and first.cache_hits == 0
    again = ScriptedBackendDouble(echo)
    second = run_job(con, "echo", again, requests_for(range(10)), Number)
    assert again.asked == [] and second.cache_hits == 10
    assert {k: v.value for k, v in second.outputs.items()} == {f"n{i}": i for i in range(10)}


def test_invalid_sampled_output_is_retried_then_recorded_as_failure_with_raw_text(db_path):
    con = connect(db_path)

    def flaky(request, times_asked):
        if request.key == "n1":
            return "I cannot do that"
        return '{"value": 2}' if times_asked >= 2 else '{"value": "two"}'

    backend = ScriptedBackendDouble(flaky)
    sampled = SamplingParams(temperature=0.7)
    result = run_job(con, "flaky", backend, requests_for([1, 2], sampled), Number, max_attempts=3)
    assert result.outputs["n2"].value == 2
    assert backend.asked.count("n2") == 2 and backend.asked.count("n1") == 3
    failure = result.failures["n1"]
    assert failure.raw == "I cannot do that" and "no JSON object" in failure.reason
    status, attempts, prompt_tokens, completion_tokens = con.execute(
        "SELECT status, attempts, prompt_tokens, completion_tokens FROM ops.llm_calls WHERE identity = ?",
        [failure.identity]).fetchone()
    assert (status, attempts) == ("failed", 3)
    assert (prompt_tokens, completion_tokens) == (9, 6)      # every attempt's tokens, not the last one's


def test_only_what_another_attempt_can_fix_is_asked_again(db_path):
    """A greedy request gives the same invalid answer again, and a prompt that does not fit the context
    never fits: each is asked once. A retryable backend error is asked again."""
    con = connect(db_path)

    class OverflowingDouble(ScriptedBackendDouble):
        def complete_batch(self, requests):
            out = []
            for request in requests:
                self.asked.append(request.key)
                if request.key == "n3":
                    out.append(Completion(text=None, retryable=False, error="context overflow: 5000 > 4096"))
                elif request.key == "n4" and self.asked.count("n4") == 1:
                    out.append(Completion(text=None, error="503 from the server"))
                else:
                    out.append(Completion(text='{"value": "x"}' if request.key == "n1" else '{"value": 4}'))
            return out

    backend = OverflowingDouble(None)
    result = run_job(con, "mixed", backend, requests_for([1, 3, 4]), Number, max_attempts=3)
    assert backend.asked.count("n1") == 1 and backend.asked.count("n3") == 1
    assert backend.asked.count("n4") == 2 and result.outputs["n4"].value == 4
    assert "context overflow" in result.failures["n3"].reason


def test_a_cut_off_prose_answer_is_a_failure():
    from caseforge.llm.jobs import _parse
    from caseforge.llm.types import FreeText

    parsed, error = _parse(Completion(text="The court finds that", finish_reason="length", completion_tokens=64),
                           FreeText)
    assert parsed is None and error == "answer cut off at max_tokens (64 tokens)"
    assert _parse(Completion(text="Done.", finish_reason="stop"), FreeText)[0].text == "Done."


def test_cached_failures_are_asked_again_when_the_settings_say_so(db_path, monkeypatch):
    con = connect(db_path)
    answers = iter(["no json", '{"value": 1}'])
    backend = ScriptedBackendDouble(lambda request, n: next(answers))
    assert "n1" in run_job(con, "once", backend, requests_for([1]), Number).failures
    assert "n1" in run_job(con, "once", backend, requests_for([1]), Number).failures   # cached, not asked
    assert backend.asked == ["n1"]
    monkeypatch.setenv("CASEFORGE_LLM_RETRY_FAILED", "1")
    assert run_job(con, "once", backend, requests_for([1]), Number).outputs["n1"].value == 1
    assert backend.asked == ["n1", "n1"]


def test_a_killed_job_resumes_with_only_the_unfinished_requests(db_path):
    con = connect(db_path)

    class DiesAfterFirstBatchDouble(ScriptedBackendDouble):
        def complete_batch(self, requests):
            if len(self.asked) >= self.batch_size:
                raise KeyboardInterrupt("killed")
            return super().complete_batch(requests)

    with pytest.raises(KeyboardInterrupt):
        run_job(con, "echo", DiesAfterFirstBatchDouble(echo, batch_size=4), requests_for(range(10)), Number)
    assert con.execute("SELECT count(*) FROM ops.llm_calls").fetchone()[0] == 4
    resumed = ScriptedBackendDouble(echo, batch_size=4)
    result = run_job(con, "echo", resumed, requests_for(range(10)), Number)
    assert sorted(resumed.asked) == sorted(f"n{i}" for i in range(4, 10))
    assert len(result.outputs) == 10 and result.cache_hits == 4


def test_editing_the_template_changes_identity(tmp_path):
    (tmp_path / "t.j2").write_text("{% block user %}v1 {{ x }}{% endblock %}")
    one = render("t.j2", root=tmp_path, x=1)
    (tmp_path / "t.j2").write_text("{% block user %}v2 {{ x }}{% endblock %}")
    two = render("t.j2", root=tmp_path, x=1)
    assert one.template_sha != two.template_sha


def test_replay_answers_recorded_identities_and_refuses_others(db_path, tmp_path):
    con = connect(db_path)
    run_job(con, "echo", ScriptedBackendDouble(echo), requests_for([1, 2]), Number)
    replay_file = tmp_path / "replay.jsonl"
    assert export_replay(con, replay_file) == 2
    fresh = connect(tmp_path / "other.duckdb")
    replayed = run_job(fresh, "echo", ReplayBackend("double-model", replay_file=replay_file),
                       requests_for([1, 2]), Number)
    assert {k: v.value for k, v in replayed.outputs.items()} == {"n1": 1, "n2": 2}
    with pytest.raises(ReplayMiss, match="no answer for 1 request"):
        run_job(fresh, "echo", ReplayBackend("double-model", replay_file=replay_file), requests_for([3]), Number)
    assert json.loads(replay_file.read_text().splitlines()[0])["model"] == "double-model"


def passages_request(key: str, passages: list[str], max_tokens: int = 50):
    from caseforge.llm import LLMRequest, SamplingParams

    user = "Question: what did the Court find?\n" + "\n".join(f"[{n}] {p}" for n, p in enumerate(passages, 1))
    return LLMRequest(key=key, messages=[{"role": "system", "content": "Answer from the passages."},
                                         {"role": "user", "content": user}],
                      params=SamplingParams(max_tokens=max_tokens), template_id="demo/check.j2", template_sha="abc")


def test_replay_file_stores_whole_requests_and_a_miss_names_the_differing_passage(db_path, tmp_path):
    con = connect(db_path)
    backend = ScriptedBackendDouble(lambda request, _n: '{"value": 1}')
    recorded = [passages_request("q393", ["Article 17 applies only exceptionally.", "Pastörs § 37.", "Perinçek § 209."]),
                passages_request("q196", ["Effective control of an area.", "Al-Skeini § 138."])]
    run_job(con, "check", backend, recorded, Number)
    replay_file = tmp_path / "replay.jsonl"
    export_replay(con, replay_file)
    stored = {json.loads(line)["key"]: json.loads(line) for line in replay_file.read_text().splitlines()}
    assert stored["q393"]["request"]["messages"] == recorded[0].messages
    assert stored["q393"]["request"]["params"]["max_tokens"] == 50

    replay = ReplayBackend("double-model", replay_file=replay_file)
    moved = passages_request("q393", ["Article 17 applies only exceptionally.", "Pastörs § 37.", "Perinçek § 210."])
    with pytest.raises(ReplayMiss) as miss:
        run_job(connect(tmp_path / "fresh.duckdb"), "check", replay, [moved], Number)
    message = str(miss.value)
    assert "nearest recorded request: key=q393" in message
    assert "message 2 (user) line 4: wanted '[3] Perinçek § 210.', recorded '[3] Perinçek § 209.'" in message

    longer = passages_request("q196", ["Effective control of an area.", "Al-Skeini § 138."], max_tokens=60)
    with pytest.raises(ReplayMiss, match=r"key=q196 .*differs in params: wanted .*'max_tokens': 60"):
        run_job(connect(tmp_path / "fresh2.duckdb"), "check", replay, [longer], Number)


def test_a_hand_edited_replay_record_is_refused(db_path, tmp_path):
    con = connect(db_path)
    run_job(con, "check", ScriptedBackendDouble(lambda r, n: '{"value": 1}'), [passages_request("a", ["x"])], Number)
    replay_file = tmp_path / "replay.jsonl"
    export_replay(con, replay_file)
    record = json.loads(replay_file.read_text())
    record["request"]["messages"][1]["content"] += " edited"
    replay_file.write_text(json.dumps(record) + "\n")
    with pytest.raises(ValueError, match="replay.jsonl:1: the stored request does not hash to its identity"):
        ReplayBackend("double-model", replay_file=replay_file)


class StreamingBackendDouble(ScriptedBackendDouble):
    """Test double for a streaming backend: hands answers over in an order of its own."""

    def __init__(self, answer, order=reversed, repeat_first=False, drop_last=False):
        super().__init__(answer, batch_size=1000)
        self.order, self.repeat_first, self.drop_last = order, repeat_first, drop_last

    def complete_stream(self, requests):
        completions = self.complete_batch(requests)
        indices = list(self.order(range(len(requests))))
        if self.repeat_first:
            indices.insert(1, indices[0])
        if self.drop_last:
            indices.pop()
        for index in indices:
            yield index, completions[index]


def test_streamed_answers_in_any_order_reach_their_own_request(db_path):
    con = connect(db_path)

    def flaky_for_even(request, times_asked):
        n = int(request.key[1:])
        return f'{{"value": {n}}}' if n % 2 or times_asked > 1 else "not yet"

    backend = StreamingBackendDouble(flaky_for_even)
    result = run_job(con, "echo", backend, requests_for(range(9), SamplingParams(temperature=0.7)), Number)
    assert {k: v.value for k, v in result.outputs.items()} == {f"n{i}": i for i in range(9)}
    assert sorted(backend.asked) == sorted([f"n{i}" for i in range(9)] + [f"n{i}" for i in range(0, 9, 2)])
    rows = con.execute("SELECT parsed, attempts FROM ops.llm_calls ORDER BY parsed").fetchall()
    assert [(json.loads(p)["value"], a) for p, a in rows] == [(i, 1 if i % 2 else 2) for i in range(9)]


@pytest.mark.parametrize("fault, message", [("repeat_first", "twice"), ("drop_last", "answered 4 of 5")])
def test_a_stream_that_repeats_or_loses_an_answer_is_an_error(db_path, fault, message):
    backend = StreamingBackendDouble(echo, **{fault: True})
    with pytest.raises(RuntimeError, match=message):
        run_job(connect(db_path), "echo", backend, requests_for(range(5)), Number)


def test_a_failure_while_saving_stops_the_stream_at_once(db_path, monkeypatch):
    import caseforge.llm.jobs as jobs

    class ClosableStreamDouble(StreamingBackendDouble):
        """Test double: records whether the job closed its stream."""

        closed = False

        def complete_stream(self, requests):
            try:
                yield from super().complete_stream(requests)
            finally:
                self.closed = True

    def broken_write(con, rows, refresh=False):
        if rows:
            raise OSError("disk full")

    monkeypatch.setattr(jobs, "write_calls", broken_write)
    backend = ClosableStreamDouble(echo)
    backend.batch_size = 1
    with pytest.raises(OSError, match="disk full"):
        run_job(connect(db_path), "echo", backend, requests_for(range(5)), Number)
    assert backend.closed


class BrokenLlamaDouble:
    """Test double of llama_cpp.Llama whose engine fails on every request until it is fixed."""

    def __init__(self):
        self.broken = True

    def create_chat_completion(self, **options):
        if self.broken:
            raise RuntimeError("llama_decode returned -3")
        return {"choices": [{"message": {"content": '{"value": 5}'}, "finish_reason": "stop"}], "usage": {}}


def test_a_llamacpp_engine_failure_is_not_cached_as_the_answer(db_path):
    """llama.cpp refusing a prompt over its context is the request's own failure; the engine breaking is no
    answer at all: recorded 'unanswered', asked again by the next run."""
    from caseforge.llm.backends.llamacpp import LlamaCppBackend

    backend = object.__new__(LlamaCppBackend)      # no model file: the engine is the double
    backend.model, backend.batch_size, backend.n_ctx, backend.chat_format = "double.gguf", 4, 4096, None
    backend.count_tokens = lambda request: 10
    backend.llm = BrokenLlamaDouble()
    con = connect(db_path)
    first = run_job(con, "echo", backend, requests_for([5]), Number, max_attempts=1)
    assert "llama_decode returned -3" in first.failures["n5"].reason and not first.failures["n5"].answered
    assert con.execute("SELECT status FROM ops.llm_calls").fetchall() == [("unanswered",)]
    backend.llm.broken = False
    again = run_job(con, "echo", backend, requests_for([5]), Number, max_attempts=1)
    assert again.outputs["n5"].value == 5 and again.cache_hits == 0
