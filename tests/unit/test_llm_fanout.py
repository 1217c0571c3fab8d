"""run_job fanned out to shard runs (caseforge.llm.fanout), with the runs played by a double that answers each
shard in a thread of this process the way a worker would. The real thing, on a Prefect server with process
workers, is tests/integration/test_llm_fanout_prefect.py."""
import json
import threading
from pathlib import Path

import pytest

from echo_prompts import Number, requests_for

from caseforge.llm import FreeText, fanout, run_job
from caseforge.llm.config import LLMChoice
from caseforge.llm.shards import ShardFiles, run_shard, write_request_file
from caseforge.llm.types import Completion
from caseforge.settings import overriding
from caseforge.warehouse.connection import connect


class EchoBackendDouble:
    """Answers {"value": n} to the echo prompt of n; `bad` numbers get an unparseable answer. `die_after`
    answers that many batches, then raises KeyboardInterrupt (a worker killed mid-shard); `broken` raises
    at once."""

    name = "echo-double"
    model = "double-model"
    batch_size = 2

    def __init__(self, bad=(), die_after: int | None = None, broken: bool = False, prose: bool = False):
        self.bad, self.die_after, self.broken, self.prose = set(bad), die_after, broken, prose
        self.asked: list[str] = []
        self.batches = 0
        self.choice = LLMChoice("echo-double", "double-model", {"batch_size": 2, "model_path": "/here/only"},
                                None, "validator")

    def complete_batch(self, requests):
        if self.broken:
            raise RuntimeError("the GPU fell over")
        if self.die_after is not None and self.batches >= self.die_after:
            raise KeyboardInterrupt("killed")
        self.batches += 1
        self.asked += [r.key for r in requests]
        out = []
        for r in requests:
            n = int(r.key[1:])
            text = f"The number is {n}." if self.prose else ("no idea" if n in self.bad else json.dumps({"value": n}))
            out.append(Completion(text=text, prompt_tokens=2, completion_tokens=1))
        return out


class ShardRunsDouble:
    """Stands in for Prefect: each submitted shard is answered by run_shard in a thread. `how(shard, n)` says
    what the n-th submission of a shard does: "ok", "dies" (killed mid-shard: its run stays running and its
    heartbeat stops), "fails" (the run fails), "waits" (no worker ever takes it), "stuck" (a worker took it
    and died before starting it)."""

    def __init__(self, how=lambda shard, n: "ok", ready: bool | None = True, **worker_backend):
        self.how, self.ready, self.worker_backend = how, ready, worker_backend
        self.runs: dict[str, dict] = {}
        self.submitted: list[tuple[str, str, dict]] = []
        self.workers: dict[str, EchoBackendDouble] = {}
        self.crashed: list[str] = []
        self.cancelled: list[str] = []

    def submit(self, deployment, pool, parameters, name):
        run_id = f"run-{len(self.submitted) + 1}"
        shard = Path(parameters["request_file"]).name.removesuffix(".requests.jsonl")
        n = 1 + sum(1 for _, _, p in self.submitted if p["request_file"] == parameters["request_file"])
        self.submitted.append((run_id, name, parameters))
        how = self.how(shard, n)
        state = {"waits": fanout.WAITING, "stuck": fanout.STARTING}.get(how, fanout.RUNNING)
        record = self.runs[run_id] = {"state": state, "message": ""}
        if how in ("waits", "stuck"):
            return run_id
        backend = self.workers[run_id] = EchoBackendDouble(die_after=1 if how == "dies" else None,
                                                           broken=how == "fails", **self.worker_backend)

        def work():
            try:
                run_shard(parameters["step"], backend, Path(parameters["request_file"]), parameters["max_attempts"],
                          heartbeat_s=parameters["heartbeat_s"], worker={"name": f"worker-of-{run_id}"})
                record["state"] = fanout.COMPLETED
            except KeyboardInterrupt:
                pass                                     # killed: nobody tells the server
            except Exception as exc:                     # noqa: BLE001
                record.update(state=fanout.FAILED, message=f"failed: {exc}")
        threading.Thread(target=work, daemon=True).start()
        return run_id

    def state(self, run_id):
        return self.runs[run_id]["state"], self.runs[run_id]["message"]

    def pool_ready(self, pool):
        return self.ready

    def cancel(self, run_id, reason):
        self.cancelled.append(run_id)

    def mark_crashed(self, run_id, reason):
        self.crashed.append(run_id)
        self.runs[run_id].update(state=fanout.FAILED, message=f"crashed: {reason}")


FAST = {"pool": "test-gpu", "shards": 4, "poll_s": 0.05, "heartbeat_s": 0.05, "stale_after_s": 0.6,
        "start_timeout_s": 0.5, "no_worker_timeout_s": 0.5, "max_submissions": 3}


@pytest.fixture
def runs_installed():
    """Installs a ShardRunsDouble (given as the fixture's call) and puts back what was there."""
    before = fanout.installed()
    chosen = []

    def install(runs):
        chosen.append(runs)
        fanout.install(runs)
        return runs
    yield install
    fanout.install(before)


def calls(con):
    return con.execute("SELECT identity, step, backend, model, status, parsed, response_text, error "
                       "FROM ops.llm_calls ORDER BY identity").fetchall()


def leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_a_fanned_out_job_equals_the_same_job_in_process(tmp_path, runs_installed):
    requests = requests_for(range(30))
    alone = connect(tmp_path / "alone.duckdb")
    in_process = run_job(alone, "echo", EchoBackendDouble(bad={7}), requests, Number)

    runs = runs_installed(ShardRunsDouble(bad={7}))
    con = connect(tmp_path / "fanned.duckdb")
    orchestrator = EchoBackendDouble(bad={7})
    with overriding({"fanout": {**FAST, "shard_dir": str(tmp_path / "shards")}}):
        result = run_job(con, "echo", orchestrator, requests, Number, max_attempts=1)

    assert orchestrator.asked == []                       # every answer came from a shard run
    assert len(runs.submitted) == 4 and result.fanout is not None
    assert [s.status for s in result.fanout.shards] == ["merged"] * 4
    assert sum(s.rows for s in result.fanout.shards) == 30
    assert {s.worker["name"] for s in result.fanout.shards} == {f"worker-of-run-{i}" for i in range(1, 5)}
    # the workers' answers, parsed into the real model: the same cache rows and outputs as in process
    assert {k: v.value for k, v in result.outputs.items()} == {k: v.value for k, v in in_process.outputs.items()}
    assert set(result.failures) == set(in_process.failures) == {"n7"}
    assert [row[:1] + row[2:] for row in calls(con)] == [row[:1] + row[2:] for row in calls(alone)]
    # a run's parameters: the choice without what differs per machine
    parameters = runs.submitted[0][2]
    assert parameters["backend"] == "echo-double" and parameters["model"] == "double-model"
    assert parameters["options"] == {"batch_size": 2} and parameters["role"] == "validator"
    assert leftovers(tmp_path / "shards") == []          # every shard file removed after its merge
    again = run_job(con, "echo", orchestrator, requests, Number)
    assert again.fanout is None and again.cache_hits == 30 and len(runs.submitted) == 4


def test_a_shard_whose_worker_dies_is_submitted_again_and_resumes(tmp_path, runs_installed):
    requests = requests_for(range(24))
    runs = runs_installed(ShardRunsDouble(how=lambda shard, n: "dies" if (shard, n) == ("shard-001", 1) else "ok"))
    con = connect(tmp_path / "fanned.duckdb")
    with overriding({"fanout": {**FAST, "shard_dir": str(tmp_path / "shards")}}):
        result = run_job(con, "echo", EchoBackendDouble(), requests, Number)

    assert len(result.outputs) == 24 and not result.failures
    shard = next(s for s in result.fanout.shards if s.number == 1)
    assert [s.outcome for s in shard.submissions][-1] == "merged" and len(shard.submissions) == 2
    assert "no heartbeat" in shard.submissions[0].outcome
    assert runs.crashed == [shard.submissions[0].run_id]
    first, second = (runs.workers[s.run_id] for s in shard.submissions)
    assert len(first.asked) == 2 and len(second.asked) == len(shard.identities) - 2   # resumed, not redone
    assert leftovers(tmp_path / "shards") == []


def test_a_shard_that_keeps_failing_ends_as_failures_not_a_hang(tmp_path, runs_installed):
    requests = requests_for(range(16))
    runs = runs_installed(ShardRunsDouble(how=lambda shard, n: "fails" if shard == "shard-002" else "ok"))
    con = connect(tmp_path / "fanned.duckdb")
    with overriding({"fanout": {**FAST, "shard_dir": str(tmp_path / "shards")}}):
        result = run_job(con, "echo", EchoBackendDouble(), requests, Number)

    shard = next(s for s in result.fanout.shards if s.number == 2)
    assert shard.status == "failed" and len(shard.submissions) == 3
    assert "the GPU fell over" in shard.reason and "after 3 submission(s)" in shard.reason
    assert len(result.failures) == len(shard.identities) and len(result.outputs) == 16 - len(shard.identities)
    assert all("shard 2 given up" in f.reason for f in result.failures.values())
    cached = {row[0] for row in calls(con)}
    assert not cached & set(shard.identities)             # not cached: the next run asks them again
    # only the work file of the given-up shard stays, for a later run to resume from
    assert [Path(p).name for p in leftovers(tmp_path / "shards")] == ["shard-002.work.duckdb"]

    runs.how = lambda shard, n: "ok"
    with overriding({"fanout": {**FAST, "shard_dir": str(tmp_path / "shards")}}):
        retried = run_job(con, "echo", EchoBackendDouble(), requests, Number)
    assert not retried.failures and len(retried.fanout.shards) == 1
    assert leftovers(tmp_path / "shards") == []


def test_a_shard_a_worker_took_but_never_started_is_submitted_again(tmp_path, runs_installed):
    runs = runs_installed(ShardRunsDouble(how=lambda shard, n: "stuck" if n == 1 else "ok"))
    con = connect(tmp_path / "fanned.duckdb")
    with overriding({"fanout": {**FAST, "shard_dir": str(tmp_path / "shards")}}):
        result = run_job(con, "echo", EchoBackendDouble(), requests_for(range(8)), Number)
    assert len(result.outputs) == 8
    assert all("not started within start_timeout_s" in s.submissions[0].outcome for s in result.fanout.shards)
    assert len(runs.crashed) == len(result.fanout.shards)


def test_shards_no_worker_takes_are_given_up(tmp_path, runs_installed):
    runs = runs_installed(ShardRunsDouble(how=lambda shard, n: "waits", ready=False))
    con = connect(tmp_path / "fanned.duckdb")
    with overriding({"fanout": {**FAST, "shard_dir": str(tmp_path / "shards")}}):
        result = run_job(con, "echo", EchoBackendDouble(), requests_for(range(8)), Number)
    assert len(result.failures) == 8 and not result.outputs
    assert all("no worker on pool test-gpu" in s.reason for s in result.fanout.shards)
    assert sorted(runs.cancelled) == sorted(run_id for run_id, _, _ in runs.submitted)


def test_answers_a_stopped_job_left_are_merged_first(tmp_path, runs_installed):
    runs = runs_installed(ShardRunsDouble())
    con = connect(tmp_path / "fanned.duckdb")
    requests = requests_for(range(10))
    with overriding({"fanout": {**FAST, "shard_dir": str(tmp_path / "shards")}}):
        folder = fanout.shard_folder(con, fanout.FanoutSettings.from_settings(), "echo")
        folder.mkdir(parents=True)
        schema = Number.model_json_schema()
        left = [r.model_copy(update={"json_schema": schema}) for r in requests[:4]]
        run_shard("echo", EchoBackendDouble(), write_request_file(folder / "shard-009.requests.jsonl", left))
        ShardFiles(folder, "shard-009").requests.unlink()
        result = run_job(con, "echo", EchoBackendDouble(), requests, Number)
    assert result.fanout.leftover_rows == 4 and len(result.outputs) == 10
    assert sum(len(s.identities) for s in result.fanout.shards) == 6
    assert len(runs.submitted) == len(result.fanout.shards)


def test_prose_steps_fan_out_too(tmp_path, runs_installed):
    runs_installed(ShardRunsDouble(prose=True))
    con = connect(tmp_path / "fanned.duckdb")
    with overriding({"fanout": {**FAST, "shard_dir": str(tmp_path / "shards")}}):
        result = run_job(con, "prose", EchoBackendDouble(prose=True), requests_for(range(6)), FreeText)
    assert result.fanout is not None and result.outputs["n3"].text == "The number is 3."


def test_when_fan_out_is_off_or_cannot_happen_the_job_runs_in_process(tmp_path, runs_installed):
    con = connect(tmp_path / "w.duckdb")
    runs_installed(None)
    with overriding({"fanout": {**FAST, "shard_dir": str(tmp_path / "shards")}}):
        with pytest.raises(RuntimeError, match="nothing can submit shard runs"):
            run_job(con, "echo", EchoBackendDouble(), requests_for(range(3)), Number)
        handed_over = EchoBackendDouble()
        del handed_over.choice                       # a backend not chosen through the settings
        assert run_job(con, "echo", handed_over, requests_for(range(3)), Number).fanout is None
        assert handed_over.asked == ["n0", "n1", "n2"]
    backend = EchoBackendDouble()
    assert run_job(con, "echo", backend, requests_for(range(5)), Number).fanout is None   # no pool named
    assert backend.asked == ["n3", "n4"]


def test_fanout_settings_are_checked():
    assert fanout.FanoutSettings.from_settings() is None                 # the built-in default: no pool
    with overriding({"fanout": {"pool": "gpu", "shards": "8"}}):
        assert fanout.FanoutSettings.from_settings().shards == 8
    with overriding({"fanout": {"pool": "gpu", "shard": 8}}):
        with pytest.raises(ValueError, match="unknown setting"):
            fanout.FanoutSettings.from_settings()
    with overriding({"fanout": {"pool": "gpu", "deployment": "llm-shard"}}):
        with pytest.raises(ValueError, match="flow name/deployment name"):
            fanout.FanoutSettings.from_settings()


def test_a_backend_chosen_through_the_settings_knows_its_choice():
    from caseforge.llm.config import backend_for, llm_choice
    chosen = llm_choice("casefacts.factuality", "validator", "openai", "some-model", base_url="http://gpu:8000/v1",
                        api_key="secret")
    backend = backend_for(chosen)
    assert backend.choice == chosen
    assert backend.choice.identity()["options"] == {"base_url": "http://gpu:8000/v1"}
