"""Sharded LLM steps: split the pending requests, answer each shard apart, merge back into the cache."""
import json
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from echo_prompts import Number, requests_for  # noqa: E402

from caseforge.llm import FreeText, run_job  # noqa: E402
from caseforge.llm.shards import Shard, merge_shards, read_rows, split_requests, write_request_shards  # noqa: E402
from caseforge.llm.types import Completion  # noqa: E402
from caseforge.llm.worker import run_shard  # noqa: E402
from caseforge.store import open_store  # noqa: E402
from caseforge.warehouse.connection import connect  # noqa: E402


def answer_rows(shard: Shard):
    return read_rows(shard.store.get(shard.answers), shard.answers)[0]


class EchoBackendDouble:
    """Answers {"value": n} for the echo prompt; `bad` numbers get an unparseable answer."""

    name = "echo-double"
    model = "double-model"
    batch_size = 4

    def __init__(self, bad=()):
        self.bad = set(bad)
        self.asked: list[str] = []

    def complete_batch(self, requests):
        self.asked += [r.key for r in requests]
        out = []
        for r in requests:
            n = int(r.key[1:])
            out.append(Completion(text="no idea" if n in self.bad else json.dumps({"value": n}), prompt_tokens=1,
                                  completion_tokens=1))
        return out



def test_split_is_stable_and_complete():
    requests = requests_for(range(40))
    shards = split_requests(requests, "double-model", 4)
    assert sorted(r.key for shard in shards for r in shard) == sorted(r.key for r in requests)
    again = split_requests(list(reversed(requests)), "double-model", 4)
    assert [sorted(r.key for r in s) for s in shards] == [sorted(r.key for r in s) for s in again]
    assert all(shards)   # 40 requests over 4 shards: none empty


def test_shards_round_trip_into_the_cache(db_path, tmp_path):
    con = connect(db_path)
    run_job(con, "echo", EchoBackendDouble(), requests_for(range(3)), Number)   # already answered
    store = open_store(tmp_path / "shards")
    files = write_request_shards(con, requests_for(range(20)), "double-model", Number, 3, store)
    sent = [r.key for f in files for r in f.read_requests()]
    assert sorted(sent) == sorted(f"n{i}" for i in range(3, 20))
    for f in files:
        name, result = run_shard("echo", EchoBackendDouble(bad={7}), f, max_attempts=2)
        assert name == f.answers and answer_rows(f).num_rows == len(f.read_requests())
    outcome = merge_shards(con, store)
    assert outcome.rows == 17 and len(files) == 3
    untouched = EchoBackendDouble()
    result = run_job(con, "echo", untouched, requests_for(range(20)), Number)
    assert untouched.asked == [] and result.cache_hits == 20
    assert {k: v.value for k, v in result.outputs.items()} == {f"n{i}": i for i in range(20) if i != 7}
    assert result.failures["n7"].raw == "no idea"
    merge_shards(con, store)   # merging again adds nothing
    assert con.execute("SELECT count(*), count(DISTINCT identity) FROM ops.llm_calls").fetchone() == (20, 20)


def test_a_failed_shard_answer_never_replaces_an_ok_one(db_path, tmp_path):
    con = connect(db_path)
    store = open_store(tmp_path / "shards")
    [shard] = write_request_shards(con, requests_for([5]), "double-model", Number, 1, store)
    run_shard("echo", EchoBackendDouble(bad={5}), shard, max_attempts=1)
    run_job(con, "echo", EchoBackendDouble(), requests_for([5]), Number)   # answered meanwhile, ok
    merge_shards(con, store)
    assert con.execute("SELECT status FROM ops.llm_calls").fetchall() == [("ok",)]


def test_a_killed_shard_resumes_from_the_parts_it_saved_in_the_store(tmp_path):
    store = open_store(tmp_path / "shards")
    [shard] = write_request_shards(connect(tmp_path / "w.duckdb"), requests_for(range(10)), "double-model",
                                   Number, 1, store)

    class DiesOnSecondBatchDouble(EchoBackendDouble):
        def complete_batch(self, requests):
            if self.asked:
                raise KeyboardInterrupt("killed")
            return super().complete_batch(requests)

    with pytest.raises(KeyboardInterrupt):
        run_shard("echo", DiesOnSecondBatchDouble(), shard)
    assert not shard.has_answers() and len(shard.parts()) == 1       # the first batch, saved as it came
    resumed = EchoBackendDouble()
    run_shard("echo", resumed, shard)
    assert len(resumed.asked) == 6
    assert answer_rows(shard).num_rows == 10


def test_a_worker_checks_answers_against_the_schema_the_requests_carry(tmp_path):
    from caseforge.llm.shards import shard_output_model

    model = shard_output_model([r.model_copy(update={"json_schema": Number.model_json_schema()})
                                for r in requests_for([1, 2])])
    assert model.model_validate({"value": 3}).root == {"value": 3}
    with pytest.raises(ValueError, match="value: 'x' is not of type 'integer'"):
        model.model_validate({"value": "x"})
    with pytest.raises(ValueError, match="'value' is a required property"):
        model.model_validate({})
    with pytest.raises(ValueError, match="one step"):
        shard_output_model(requests_for([1]) + [r.model_copy(update={"json_schema": Number.model_json_schema()})
                                                for r in requests_for([2])])
    assert shard_output_model(requests_for([1, 2])) is FreeText      # no schema: the step wants prose


class Echoed(BaseModel):
    value: int


def test_the_gpu_shard_task_answers_a_shard_with_a_configured_backend(db_path, tmp_path, monkeypatch):
    from caseforge.flows.llm_shard import answer_shard
    from caseforge.llm.backends.replay import export_replay

    recorded = connect(tmp_path / "recorded.duckdb")
    run_job(recorded, "echo", EchoBackendDouble(), requests_for(range(6)), Echoed)
    export_replay(recorded, tmp_path / "replay.jsonl")
    con = connect(db_path)
    store = open_store(tmp_path / "shards")
    files = write_request_shards(con, requests_for(range(6)), "double-model", Echoed, 2, store)
    monkeypatch.setenv("CASEFORGE_REPLAY_FILE", str(tmp_path / "replay.jsonl"))   # this machine's own file
    for f in files:
        counts = answer_shard.fn("echo", str(tmp_path / "shards"), f.name, "replay", "double-model", {}, 1)
        assert counts["llm_failed"] == 0 and counts["answers"] == f"{store.url}/{f.answers}" and f.has_answers()
    assert merge_shards(con, store).rows == 6


def test_a_worker_whose_environment_names_the_store_answers_only_shards_under_it(db_path, tmp_path, monkeypatch):
    """CASEFORGE_FANOUT_STORE (a kubernetes pool's `store` job variable): the worker opens that store and takes only
    the shard's place in it from the run's parameters; a shard elsewhere is refused in one line, never read."""
    from caseforge.flows.llm_shard import answer_shard
    from caseforge.llm.backends.replay import export_replay
    from caseforge.llm.worker import worker_store
    from caseforge.settings import load_settings, variables_of
    from caseforge.store import StoreError

    [STORE_ENV] = variables_of("fanout_store")

    recorded = connect(tmp_path / "recorded.duckdb")
    run_job(recorded, "echo", EchoBackendDouble(), requests_for(range(4)), Echoed)
    export_replay(recorded, tmp_path / "replay.jsonl")
    monkeypatch.setenv("CASEFORGE_REPLAY_FILE", str(tmp_path / "replay.jsonl"))
    step_store = open_store(tmp_path / "root").child("cf-1234abcd").child("echo")
    [shard] = write_request_shards(connect(db_path), requests_for(range(4)), "double-model", Echoed, 1, step_store)

    monkeypatch.setenv(STORE_ENV, str(tmp_path / "root"))
    assert worker_store(load_settings(), step_store.url).url == step_store.url
    counts = answer_shard.fn("echo", step_store.url, shard.name, "replay", "double-model", {}, 1)
    assert counts["llm_ok"] == 4 and shard.has_answers()

    elsewhere = open_store(tmp_path / "other").child("cf-1234abcd").child("echo")
    with pytest.raises(StoreError) as refused:
        worker_store(load_settings(), elsewhere.url)
    message = str(refused.value)
    assert "\n" not in message and str(tmp_path / "root") in message and elsewhere.url in message
    assert STORE_ENV in message
    with pytest.raises(StoreError):            # a sibling whose name only starts like the worker's store
        worker_store(load_settings(), str(tmp_path / "root-b" / "x"))
    monkeypatch.setenv(STORE_ENV, "s3://shards/prod")
    assert worker_store(load_settings(), "s3://shards/prod/cf-1/echo").url == "s3://shards/prod/cf-1/echo"
    assert worker_store(load_settings(), "s3a://shards/prod/cf-1/echo").url == "s3://shards/prod/cf-1/echo"
    with pytest.raises(StoreError):
        worker_store(load_settings(), "s3://shards/production/cf-1/echo")
    monkeypatch.setenv(STORE_ENV, "")           # empty: the run's own store, as without the variable
    assert worker_store(load_settings(), elsewhere.url).url == elsewhere.url
