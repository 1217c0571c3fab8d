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
from caseforge.llm.shards import ANSWERS, Shard
from caseforge.llm.types import Completion
from caseforge.llm.worker import run_shard
from caseforge.settings import SettingsError, load_settings, overriding
from caseforge.store import Store, StoreError, open_store
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


class StoreLosingAnswers(Store):
    """A worker's store that never receives the shard's whole answers (the worker died as it wrote them):
    only its saved parts reach the store. Dropping the write, not deleting the object after it, leaves no
    moment in which the orchestrator could see answers that the run never delivered."""

    def put(self, name: str, data: bytes) -> None:
        if not name.endswith("/" + ANSWERS):
            super().put(name, data)


class ShardRunsDouble:
    """Stands in for Prefect: each submitted shard is answered by run_shard in a thread, whose flow-run
    heartbeat beats while it works. `how(shard, n)` says what the n-th submission of a shard does: "ok",
    "dies" (killed mid-shard: its run stays running and its heartbeat stops), "fails" (the run fails),
    "waits" (no worker ever takes it), "stuck" (a worker took it and died before starting it), "crashes after"
    (answers everything, then its run is marked Crashed without the worker writing its answers: the zombie
    automation's false positive)."""

    def __init__(self, how=lambda shard, n: "ok", ready: bool | None = True, **worker_backend):
        self.how, self.ready, self.worker_backend = how, ready, worker_backend
        self.runs: dict[str, dict] = {}
        self.submitted: list[tuple[str, str, dict]] = []
        self.workers: dict[str, EchoBackendDouble] = {}
        self.crashed: list[str] = []
        self.cancelled: list[str] = []

    def submit(self, deployment, pool, parameters, name):
        run_id = f"run-{len(self.submitted) + 1}"
        shard = parameters["shard"].split("-", 1)[1]          # <job>-shard-NNN
        n = 1 + sum(1 for _, _, p in self.submitted if p["shard"] == parameters["shard"])
        self.submitted.append((run_id, name, parameters))
        how = self.how(shard, n)
        state = {"waits": fanout.WAITING, "stuck": fanout.STARTING}.get(how, fanout.RUNNING)
        record = self.runs[run_id] = {"state": state, "message": "", "beats": 0}
        if how in ("waits", "stuck"):
            return run_id
        backend = self.workers[run_id] = EchoBackendDouble(die_after=1 if how == "dies" else None,
                                                           broken=how == "fails", **self.worker_backend)

        def answer() -> dict | None:
            store = open_store(parameters["store"])
            if how == "crashes after":
                store = StoreLosingAnswers(**vars(store))
            shard = Shard(store, parameters["shard"])
            run_shard(parameters["step"], backend, shard, parameters["max_attempts"],
                      worker={"name": f"worker-of-{run_id}"})
            if how == "crashes after":
                return {"state": fanout.FAILED, "message": "crashed: marked by the zombie automation"}
            return None
        self.answer_in_thread(record, answer)
        return run_id

    @staticmethod
    def answer_in_thread(record: dict, answer) -> None:
        """Run `answer` in a thread as a live run: it beats while it works (a constant beat reads as a dead
        worker under load), ends COMPLETED (or as `answer` says), FAILED with the error, or, killed, tells
        nobody."""
        stopped = threading.Event()

        def beat():
            while not stopped.wait(0.05):
                record["beats"] += 1

        def work():
            threading.Thread(target=beat, daemon=True).start()
            try:
                record.update(answer() or {"state": fanout.COMPLETED})
            except KeyboardInterrupt:
                pass                                     # killed: nobody tells the server
            except Exception as exc:                     # noqa: BLE001
                record.update(state=fanout.FAILED, message=f"failed: {exc}")
            finally:
                stopped.set()
        threading.Thread(target=work, daemon=True).start()

    def state(self, run_id):
        return self.runs[run_id]["state"], self.runs[run_id]["message"]

    def heartbeat(self, run_id):
        return str(self.runs[run_id]["beats"]) if self.runs[run_id]["beats"] else None

    def pool_ready(self, pool):
        return self.ready

    def cancel(self, run_id, reason):
        self.cancelled.append(run_id)

    def mark_crashed(self, run_id, reason):
        self.crashed.append(run_id)
        self.runs[run_id].update(state=fanout.FAILED, message=f"crashed: {reason}")


FAST = {"pool": "test-gpu", "shards": 4, "min_shard_requests": 1, "poll_s": 0.05, "heartbeat_s": 0.05, "stale_after_s": 0.6,
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
    with overriding({"fanout": {**FAST, "store": str(tmp_path / "shards")}}):
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
    with overriding({"fanout": {**FAST, "store": str(tmp_path / "shards")}}):
        result = run_job(con, "echo", EchoBackendDouble(), requests, Number)

    assert len(result.outputs) == 24 and not result.failures
    shard = next(s for s in result.fanout.shards if s.number == 1)
    assert [s.outcome for s in shard.submissions][-1] == "merged" and len(shard.submissions) == 2
    assert "no flow-run heartbeat" in shard.submissions[0].outcome
    assert runs.crashed == [shard.submissions[0].run_id]
    first, second = (runs.workers[s.run_id] for s in shard.submissions)
    assert len(first.asked) == 2 and len(second.asked) == len(shard.identities) - 2   # resumed, not redone
    assert leftovers(tmp_path / "shards") == []


def test_a_shard_that_keeps_failing_ends_as_failures_not_a_hang(tmp_path, runs_installed):
    requests = requests_for(range(16))
    runs = runs_installed(ShardRunsDouble(how=lambda shard, n: "fails" if shard == "shard-002" else "ok"))
    con = connect(tmp_path / "fanned.duckdb")
    with overriding({"fanout": {**FAST, "store": str(tmp_path / "shards")}}):
        result = run_job(con, "echo", EchoBackendDouble(), requests, Number)

    shard = next(s for s in result.fanout.shards if s.number == 2)
    assert shard.status == "failed" and len(shard.submissions) == 3
    assert "the GPU fell over" in shard.reason and "after 3 submission(s)" in shard.reason
    assert len(result.failures) == len(shard.identities) and len(result.outputs) == 16 - len(shard.identities)
    assert all("shard 2 given up" in f.reason for f in result.failures.values())
    cached = {row[0] for row in calls(con)}
    assert not cached & set(shard.identities)             # not cached: the next run asks them again
    # the given-up shard's requests are gone; it saved no answer, so nothing of it stays
    assert leftovers(tmp_path / "shards") == []

    runs.how = lambda shard, n: "ok"
    with overriding({"fanout": {**FAST, "store": str(tmp_path / "shards")}}):
        retried = run_job(con, "echo", EchoBackendDouble(), requests, Number)
    assert not retried.failures and len(retried.fanout.shards) == 1
    assert leftovers(tmp_path / "shards") == []


def test_a_shard_a_worker_took_but_never_started_is_submitted_again(tmp_path, runs_installed):
    runs = runs_installed(ShardRunsDouble(how=lambda shard, n: "stuck" if n == 1 else "ok"))
    con = connect(tmp_path / "fanned.duckdb")
    with overriding({"fanout": {**FAST, "store": str(tmp_path / "shards")}}):
        result = run_job(con, "echo", EchoBackendDouble(), requests_for(range(8)), Number)
    assert len(result.outputs) == 8
    assert all("not started within start_timeout_s" in s.submissions[0].outcome for s in result.fanout.shards)
    assert len(runs.crashed) == len(result.fanout.shards)


def test_shards_no_worker_takes_are_given_up(tmp_path, runs_installed):
    runs = runs_installed(ShardRunsDouble(how=lambda shard, n: "waits", ready=False))
    con = connect(tmp_path / "fanned.duckdb")
    with overriding({"fanout": {**FAST, "store": str(tmp_path / "shards")}}):
        result = run_job(con, "echo", EchoBackendDouble(), requests_for(range(8)), Number)
    assert len(result.failures) == 8 and not result.outputs
    assert all("no worker on pool test-gpu" in s.reason for s in result.fanout.shards)
    assert sorted(runs.cancelled) == sorted(run_id for run_id, _, _ in runs.submitted)


def test_answers_a_stopped_job_left_are_merged_first(tmp_path, runs_installed):
    runs = runs_installed(ShardRunsDouble())
    con = connect(tmp_path / "fanned.duckdb")
    requests = requests_for(range(10))
    with overriding({"fanout": {**FAST, "store": str(tmp_path / "shards")}}):
        store = fanout.step_store(con, load_settings().file.fanout, "echo")
        schema = Number.model_json_schema()
        left = Shard(store, "0ldj0b00-shard-009")           # a job that stopped after its worker finished
        left.write_requests([r.model_copy(update={"json_schema": schema}) for r in requests[:4]])
        run_shard("echo", EchoBackendDouble(), left)
        result = run_job(con, "echo", EchoBackendDouble(), requests, Number)
    assert result.fanout.leftover_rows == 4 and len(result.outputs) == 10
    assert sum(len(s.identities) for s in result.fanout.shards) == 6
    assert len(runs.submitted) == len(result.fanout.shards)
    assert leftovers(tmp_path / "shards") == []


def test_a_given_up_shard_leaves_its_saved_answers_and_the_next_run_asks_only_the_rest(tmp_path, runs_installed):
    requests = requests_for(range(12))
    runs = runs_installed(ShardRunsDouble(how=lambda shard, n: "dies"))
    con = connect(tmp_path / "fanned.duckdb")
    settings = {"fanout": {**FAST, "shards": 1, "max_submissions": 1, "store": str(tmp_path / "shards")}}
    with overriding(settings):
        result = run_job(con, "echo", EchoBackendDouble(), requests, Number)
    [shard] = result.fanout.shards
    assert shard.status == "failed" and len(result.failures) == 12
    assert [p.rsplit("/", 2)[-2] for p in leftovers(tmp_path / "shards")] == ["parts"]   # one batch of 2, saved

    runs.how = lambda shard, n: "ok"
    with overriding(settings):
        again = run_job(con, "echo", EchoBackendDouble(), requests, Number)
    assert not again.failures and again.fanout.leftover_rows == 2
    assert len(runs.workers[runs.submitted[-1][0]].asked) == 10              # only what no part answered
    assert leftovers(tmp_path / "shards") == []


def test_a_run_marked_crashed_whose_answers_are_in_the_store_is_merged_not_redone(tmp_path, runs_installed):
    runs = runs_installed(ShardRunsDouble(how=lambda shard, n: "crashes after"))
    con = connect(tmp_path / "fanned.duckdb")
    with overriding({"fanout": {**FAST, "store": str(tmp_path / "shards")}}):
        result = run_job(con, "echo", EchoBackendDouble(), requests_for(range(16)), Number)
    assert len(result.outputs) == 16 and not result.failures
    assert len(runs.submitted) == len(result.fanout.shards)                # none submitted again
    assert all("every answer in the saved parts" in s.submissions[0].outcome for s in result.fanout.shards)
    assert leftovers(tmp_path / "shards") == []


def test_prose_steps_fan_out_too(tmp_path, runs_installed):
    runs_installed(ShardRunsDouble(prose=True))
    con = connect(tmp_path / "fanned.duckdb")
    with overriding({"fanout": {**FAST, "store": str(tmp_path / "shards")}}):
        result = run_job(con, "prose", EchoBackendDouble(prose=True), requests_for(range(6)), FreeText)
    assert result.fanout is not None and result.outputs["n3"].text == "The number is 3."


def test_when_fan_out_is_off_or_cannot_happen_the_job_runs_in_process(tmp_path, runs_installed):
    con = connect(tmp_path / "w.duckdb")
    runs_installed(None)
    with overriding({"fanout": {**FAST, "store": str(tmp_path / "shards")}}):
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
    assert not load_settings().file.fanout.enabled                      # the built-in default: no pool
    with overriding({"fanout": {"pool": "gpu", "shards": "8"}}) as settings:
        assert settings.file.fanout.enabled and settings.file.fanout.shards == 8
    with pytest.raises(SettingsError, match=r"unknown setting \[fanout\] shard; did you mean shards\?"):
        with overriding({"fanout": {"pool": "gpu", "shard": 8}}):
            pass
    with pytest.raises(SettingsError, match="flow name/deployment name"):
        with overriding({"fanout": {"pool": "gpu", "deployment": "llm-shard"}}):
            pass


def test_a_backend_chosen_through_the_settings_knows_its_choice():
    from caseforge.llm.config import backend_for, llm_choice
    chosen = llm_choice(load_settings(), "casefacts.factuality", "validator", "openai", "some-model",
                        base_url="http://gpu:8000/v1", api_key="secret")
    backend = backend_for(chosen)
    assert backend.choice == chosen
    assert backend.choice.identity()["options"] == {"base_url": "http://gpu:8000/v1"}


def test_settings_name_the_store_and_refuse_what_cannot_work():
    with pytest.raises(SettingsError, match=r"unknown setting \[fanout\] shard_dir; it is now \[fanout\] store"):
        with overriding({"fanout": {"pool": "gpu", "shard_dir": "/srv/shards"}}):
            pass
    with pytest.raises(SettingsError, match="less than three heartbeats"):
        with overriding({"fanout": {"pool": "gpu", "heartbeat_s": 30, "stale_after_s": 60}}):
            pass
    with overriding({"fanout": {"pool": "gpu", "store": "s3://b/p", "store_endpoint_url": "http://s3:9000"}}):
        chosen = load_settings().file.fanout
        assert (chosen.store, chosen.store_endpoint_url) == ("s3://b/p", "http://s3:9000")
        assert fanout.store_endpoint(chosen) == "http://s3:9000"


def test_small_jobs_get_fewer_shards(tmp_path, runs_installed):
    runs = runs_installed(ShardRunsDouble())
    con = connect(tmp_path / "fanned.duckdb")
    with overriding({"fanout": {**FAST, "min_shard_requests": 15, "store": str(tmp_path / "s")}}):
        result = run_job(con, "echo", EchoBackendDouble(), requests_for(range(40)), Number)
    # no shard of fewer than min_shard_requests (as far as the split by hash allows): 40 // 15 = 2 shards, not 3
    assert len(runs.submitted) == len(result.fanout.shards) == 2 and len(result.outputs) == 40
    with overriding({"fanout": {**FAST, "min_shard_requests": 50, "store": str(tmp_path / "s")}}):
        result = run_job(con, "echo", EchoBackendDouble(), requests_for(range(40, 50)), Number)
    assert len(result.fanout.shards) == 1 and len(result.outputs) == 10      # a job smaller than that: one shard


# --- the model endpoint is the worker's own (issue 37, item 5) -------------------------------------------------
def openai_backend(base_url: str, **options):
    from caseforge.llm.config import backend_for, llm_choice
    return backend_for(llm_choice(load_settings(), "echo", "generator", "openai", "double-model", base_url=base_url,
                                  structured="none", max_retries=0, concurrency=4, batch_size=4,
                                  api_key="orchestrator-secret", **options))


def test_a_loopback_endpoint_or_a_key_is_never_shipped_to_a_worker():
    shipped = fanout.options_for_workers(openai_backend("http://127.0.0.1:8000/v1").choice)
    assert "base_url" not in shipped and "api_key" not in shipped and shipped["max_retries"] == 0
    assert "base_url" not in fanout.options_for_workers(openai_backend("http://localhost:8000/v1").choice)
    assert fanout.options_for_workers(openai_backend("http://vllm.internal:8000/v1").choice)["base_url"] == (
        "http://vllm.internal:8000/v1")


def test_a_worker_resolves_its_endpoint_from_its_own_settings_and_environment(monkeypatch):
    from caseforge.llm.worker import worker_choice

    shipped = {"base_url": "http://vllm.internal:8000/v1", "max_retries": 0}
    monkeypatch.delenv("CASEFORGE_OPENAI_BASE_URL", raising=False)
    choice = worker_choice(load_settings(), "echo", "generator", "openai", "m", shipped)
    assert choice.options["base_url"] == shipped["base_url"]
    monkeypatch.setenv("CASEFORGE_OPENAI_BASE_URL", "http://127.0.0.1:9999/v1")      # this machine's own server
    choice = worker_choice(load_settings(), "echo", "generator", "openai", "m", shipped)
    assert "base_url" not in choice.options and choice.options["max_retries"] == 0
    assert choice.backend_options()["base_url"] == "http://127.0.0.1:9999/v1"
    monkeypatch.delenv("CASEFORGE_OPENAI_BASE_URL")
    with overriding({"llm": {"backends": {"openai": {"options": {"base_url": "http://gpu-7:8000/v1"}}}}}) as settings:
        choice = worker_choice(settings, "echo", "generator", "openai", "m", shipped)
        assert choice.options["base_url"] == "http://gpu-7:8000/v1"


class RealWorkerRuns(ShardRunsDouble):
    """Stands in for Prefect only: each shard is answered in a thread by the worker's own code
    (caseforge.llm.worker.answer_shard: its choice, its backend, its endpoint from this process's environment)
    from the parameters a run would get."""

    def submit(self, deployment, pool, parameters, name):
        from caseforge.llm.worker import answer_shard

        run_id = f"run-{len(self.submitted) + 1}"
        self.submitted.append((run_id, name, parameters))
        record = self.runs[run_id] = {"state": fanout.RUNNING, "message": "", "beats": 1}

        def answer() -> None:
            p = parameters
            answer_shard(load_settings(), p["step"], open_store(p["store"]), p["shard"], p["backend"], p["model"],
                         p["options"], p["max_attempts"], p["role"], {"worker": "real-worker-double"})
        self.answer_in_thread(record, answer)
        return run_id


def test_a_worker_that_cannot_reach_its_model_records_failures_that_the_next_run_asks_again(
        tmp_path, runs_installed, monkeypatch):
    import socket

    from caseforge.llm.doubles import ScriptedOpenAIServerDouble, chat_reply

    def echo(body, call_number):
        number = int(body["messages"][-1]["content"].split("number ")[1].split(" ")[0])
        return chat_reply(json.dumps({"value": number}))

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"     # closed again: connections are refused
    runs = runs_installed(RealWorkerRuns())
    con = connect(tmp_path / "fanned.duckdb")
    requests = requests_for(range(10))
    with ScriptedOpenAIServerDouble(echo) as orchestrators_server, ScriptedOpenAIServerDouble(echo) as workers_server:
        orchestrator = openai_backend(orchestrators_server.base_url)
        monkeypatch.setenv("CASEFORGE_OPENAI_BASE_URL", dead)               # the worker's machine: no model
        with overriding({"fanout": {**FAST, "store": str(tmp_path / "s")}}):
            first = run_job(con, "echo", orchestrator, requests, Number)
        assert not first.outputs and len(first.failures) == 10
        assert all(not f.answered and "connection problem" in f.reason for f in first.failures.values()), \
            next(iter(first.failures.values()))
        assert not con.execute("SELECT count(*) FROM ops.llm_calls WHERE status <> 'unanswered'").fetchone()[0]
        assert all("base_url" not in p["options"] for _, _, p in runs.submitted)

        monkeypatch.setenv("CASEFORGE_OPENAI_BASE_URL", workers_server.base_url)   # its model is up now
        with overriding({"fanout": {**FAST, "store": str(tmp_path / "s")}}):
            second = run_job(con, "echo", orchestrator, requests, Number)
        assert not second.failures and {k: v.value for k, v in second.outputs.items()} == {
            f"n{i}": i for i in range(10)}
        assert workers_server.calls == 10 and orchestrators_server.calls == 0


# --- a bad store is refused before any shard is submitted (a real S3-compatible server) -------------------------
@pytest.mark.parametrize("problem", ["wrong credentials", "missing bucket", "unreachable endpoint"])
def test_a_bad_store_is_one_line_before_any_shard_is_submitted(problem, s3_env, tmp_path, runs_installed,
                                                               monkeypatch):
    import socket
    import time

    runs = runs_installed(ShardRunsDouble())
    bucket, endpoint = s3_env.bucket, ""
    if problem == "wrong credentials":
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
        fix = "the credentials were refused"
    elif problem == "missing bucket":
        bucket, fix = "no-such-bucket", "bucket 'no-such-bucket' does not exist there: create it"
    else:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}"
        fix = "cannot reach the endpoint"
    con = connect(tmp_path / "fanned.duckdb")
    started = time.monotonic()
    with overriding({"fanout": {**FAST, "store": f"s3://{bucket}/shards", "store_endpoint_url": endpoint}}):
        with pytest.raises(StoreError) as exc:
            run_job(con, "echo", EchoBackendDouble(), requests_for(range(8)), Number)
    message = str(exc.value)
    assert "\n" not in message and message.startswith(f"store s3://{bucket}/shards/fanned-"), message
    assert fix in message, message
    assert runs.submitted == [] and time.monotonic() - started < 60
