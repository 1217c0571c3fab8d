"""CaseFacts end to end on six real sample cases: the scripted double, the committed replay file, the CLI."""
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from caseforge.release import validate_croissant, verify_release

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "unit"))
from casefacts_double import DEMO_CONFIG, REPLAY_FILE, load_demo_cases, run_with_double  # noqa: E402

from caseforge.llm.backends.replay import ReplayBackend  # noqa: E402
from caseforge.stage_report import StageReport  # noqa: E402
from caseforge.tasks.casefacts import pipeline  # noqa: E402
from caseforge.tasks.casefacts.config import BuildConfig  # noqa: E402
from caseforge.tasks.casefacts.dataset_gate import gate_dataset  # noqa: E402
from caseforge.tasks.casefacts.embed import HashingEmbedder  # noqa: E402
from caseforge.warehouse.connection import connect  # noqa: E402

pytestmark = pytest.mark.samples
BETTS, GIDEON, PLESSY, BROWN, AUSTIN, CITIZENS = 62490, 60411, 62394, 62548, 53712, 55589


@pytest.fixture(scope="module")
def cases_db(samples_dir, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("casefacts")
    path = folder / "cases.duckdb"
    con = connect(path)
    load_demo_cases(con, samples_dir, scratch=folder)
    con.close()
    return path


@pytest.fixture
def db(cases_db, tmp_path) -> Path:
    copy = tmp_path / "warehouse.duckdb"
    shutil.copy(cases_db, copy)
    return copy


def _replay_run(con):
    config = BuildConfig(**DEMO_CONFIG)
    backends = {role: ReplayBackend(getattr(config, f"{role}_model"), replay_file=REPLAY_FILE)
                for role in ("generator", "validator")}
    report = StageReport("casefacts (replay)")
    claims = pipeline.run_pipeline(pipeline.BuildContext(con, None, report, config, backends, HashingEmbedder()))
    return claims, report


def test_double_run_exercises_every_stage_then_invalid_output_is_recorded(db):
    con = connect(db)
    claims, report, _ = run_with_double(con)
    assert report.failures == []
    fact = con.execute("SELECT status, count(*) FROM build.casefacts_factuality GROUP BY 1").fetchall()
    assert dict(fact) == {"supported": 14, "unsupported": 1}
    applied = con.execute("SELECT kind, resolution, corrected_claim FROM build.casefacts_same_case_pairs "
                          "WHERE applied ORDER BY kind").fetchall()
    assert applied == [("contradiction", "merged", "Separating children in public schools by race denies them "
                                                   "equal schooling."),
                       ("redundancy", "claim1", None)]
    overrulings = {(r[0], r[1]): (r[2], r[3]) for r in con.execute(
        "SELECT overruled_case_id, overruling_case_id, accepted, reason FROM build.casefacts_overrulings").fetchall()}
    assert overrulings[(BETTS, GIDEON)][0] is True
    assert overrulings[(AUSTIN, CITIZENS)] == (False, "overruling case disposition 'affirmed' is not a reversal")
    assert overrulings[(BROWN, PLESSY)] == (
        False, "overruling case decided 1896-05-18 is not after the overruled case decided 1954-05-17")
    merges = con.execute("SELECT action, evidence_case_ids FROM build.casefacts_merges").fetchall()
    assert merges == [("merge", json.dumps([AUSTIN, CITIZENS]))]
    windows = dict(con.execute("SELECT kind, method FROM build.casefacts_windows").fetchall())
    assert windows["contradiction"] == "calibrated" and windows["overlap"].startswith("fallback: only 1 positives")
    overruled = claims[claims["label"] == "OVERRULED"].iloc[0]
    assert json.loads(overruled["overruling_case_ids"]) == [GIDEON]
    assert sorted(json.loads(overruled["evidence_case_ids"])) == sorted([BETTS, GIDEON])
    assert set(claims["label"]) == {"SUPPORTED", "REFUTED", "OVERRULED"}
    assert claims["fact_id"].is_unique
    cases = con.execute("SELECT * FROM curated.scotus_cases").df()
    assert gate_dataset(claims, cases) == []
    _assert_invalid_output_recorded_and_stale_rows_cleared(con)


def test_replay_file_reproduces_the_double_and_reruns_from_cache(db, tmp_path):
    con = connect(db)
    claims, report = _replay_run(con)
    assert report.failures == []
    columns = ["claim_id", "fact_id", "claim", "label", "split"]
    labels = dict(zip(claims["claim_id"], claims["label"]))
    assert labels[f"c{BETTS}-0"] == "OVERRULED" and len(claims) == 11
    assert sorted(set(labels.values())) == ["OVERRULED", "REFUTED", "SUPPORTED"]
    assert (report.counts["new"], report.counts["changed"]) == (11, 0)      # the nightly's columns: its claims
    again, second = _replay_run(con)
    assert again[columns].equals(claims[columns])
    assert (second.counts["new"], second.counts["changed"]) == (0, 0)
    assert sum(v for k, v in second.counts.items() if k.endswith(".llm_calls")) == 0
    assert sum(v for k, v in second.counts.items() if k.endswith(".llm_cache_hits")) > 100


class LeakyGeneratorDouble:
    """Test double on top of the scripted one: every Gideon claim it writes names the parties and the year."""

    def __init__(self, scripted):
        self.scripted, self.model, self.name, self.batch_size = scripted, scripted.model, "leaky-double", 50
        self.factuality_prompts = []

    def complete_batch(self, requests):
        from caseforge.llm.types import Completion
        answers = self.scripted.complete_batch(requests)
        out = []
        for request, answer in zip(requests, answers):
            user = request.messages[-1]["content"]
            if request.template_id.endswith("generate_claims.j2") and "Gideon" in user:
                answer = Completion(text=json.dumps({"claims": [
                    "In 1963 Gideon won because Wainwright had to give him a lawyer at trial."]}),
                    prompt_tokens=10, completion_tokens=5)
            if request.template_id.endswith("check_factuality.j2"):
                self.factuality_prompts.append(user)
            out.append(answer)
        return out


def test_claims_naming_parties_or_dates_are_removed_before_any_check(db):
    from casefacts_double import ScriptedLegalBackendDouble
    con = connect(db)
    config = BuildConfig(**DEMO_CONFIG)
    generator = LeakyGeneratorDouble(ScriptedLegalBackendDouble(config.generator_model))
    validator = LeakyGeneratorDouble(ScriptedLegalBackendDouble(config.validator_model))
    report = StageReport("casefacts (leaky double)")
    claims = pipeline.run_pipeline(pipeline.BuildContext(
        con, None, report, config, {"generator": generator, "validator": validator}, HashingEmbedder()))
    leaked = con.execute("SELECT case_id, reason FROM build.casefacts_factuality "
                         "WHERE status = 'leaks_identifiers'").fetchall()
    assert [case for case, _ in leaked] == [GIDEON]
    assert "Gideon" in leaked[0][1] and "1963" in leaked[0][1]
    assert not any("Gideon won" in prompt for prompt in validator.factuality_prompts)   # no call spent on it
    assert not claims["claim"].str.contains("Gideon").any()
    assert gate_dataset(claims, con.execute("SELECT * FROM curated.scotus_cases").df()) == []


@pytest.mark.slow
def test_cli_build_then_export(db, tmp_path):
    from caseforge.cli import main

    code = main(["build", "casefacts", "--llm", "replay", "--replay-file", str(REPLAY_FILE), "--embedder", "hashing",
                 "--model", DEMO_CONFIG["generator_model"], "--validator-model", DEMO_CONFIG["validator_model"],
                 "--min-positives", "2", "--db", str(db)])
    assert code == 0
    out = tmp_path / "export"
    assert main(["export", "casefacts", "--out", str(out), "--db", str(db)]) == 0
    assert verify_release(out) == [] and validate_croissant(out) == []
    assert {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} >= {
        "data/train.parquet", "data/train.jsonl", "data/fresh.parquet", "README.md", "croissant.json",
        "provenance/source_payloads.tsv", "MANIFEST.sha256"}
    card = (out / "README.md").read_text()
    assert "| generate | Qwen/Qwen3-Next-80B-A3B-Instruct | casefacts/generate_claims.j2 |" in card
    assert "OVERRULED" in card
    rows = [json.loads(line) for p in (out / "data").glob("*.jsonl") if p.name != "fresh.jsonl"
            for line in p.read_text().splitlines()]
    assert len(rows) == 11 and any(r["overruling_case_names"] == ["Gideon v. Wainwright"] for r in rows)


@pytest.mark.slow
def test_retry_failed_asks_cached_failures_again_only_when_told(db, tmp_path):
    from caseforge.cli import main

    records = [json.loads(line) for line in REPLAY_FILE.read_text().splitlines()]
    broken = next(r for r in records if r["key"].startswith("fact:"))
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("".join(json.dumps({**r, "response": "no JSON here"} if r is broken else r) + "\n"
                               for r in records))

    def build(replay_file, *extra):
        return main(["build", "casefacts", "--llm", "replay", "--replay-file", str(replay_file),
                     "--embedder", "hashing", "--model", DEMO_CONFIG["generator_model"],
                     "--validator-model", DEMO_CONFIG["validator_model"], "--min-positives", "2",
                     "--db", str(db), *extra])

    def factuality_calls():
        with connect(db) as con:
            return con.execute("SELECT status, count(*) FROM ops.llm_calls WHERE step = 'casefacts.factuality' "
                               "GROUP BY 1 ORDER BY 1").fetchall()

    build(damaged)
    failed = factuality_calls()
    assert dict(failed).get("failed") == 1
    build(REPLAY_FILE)                       # the failure stays cached: nothing is asked again
    assert factuality_calls() == failed
    assert build(REPLAY_FILE, "--retry-failed") == 0
    assert dict(factuality_calls()) == {"ok": dict(failed)["ok"] + 1}
    assert "CASEFORGE_LLM_RETRY_FAILED" not in os.environ      # the flag lasts one command, not the process


def test_cli_refuses_same_family_models(db, capsys):
    from caseforge.cli import main

    code = main(["build", "casefacts", "--llm", "replay", "--replay-file", str(REPLAY_FILE), "--embedder", "hashing",
                 "--model", "Qwen/Qwen3-8B", "--validator-model", "Qwen/Qwen2.5-7B-Instruct", "--db", str(db)])
    assert code == 2 and "are both qwen models" in capsys.readouterr().err


class GarbageBackendDouble:
    """Test double: answers every prompt with text that is not JSON."""

    name = "garbage-double"
    batch_size = 20

    def __init__(self, model):
        self.model = model

    def complete_batch(self, requests):
        from caseforge.llm.types import Completion
        return [Completion(text="I would rather not answer in JSON.") for _ in requests]


def _assert_invalid_output_recorded_and_stale_rows_cleared(con):
    """After a good build, a build whose every answer is invalid: failures recorded, no stale rows left."""
    config = BuildConfig(**{**DEMO_CONFIG, "seed": 99})
    report = StageReport("casefacts (garbage)")
    backends = {"generator": GarbageBackendDouble(config.generator_model),
                "validator": GarbageBackendDouble(config.validator_model)}
    claims = pipeline.run_pipeline(pipeline.BuildContext(con, None, report, config, backends, HashingEmbedder()))
    assert claims.empty and report.counts["generate.llm_failed"] == 6
    assert len(report.failures) == 6 and all("no claims" in f and "no JSON" in f for f in report.failures)
    for table in ("generated", "factuality", "kept_claims", "cross_pairs", "claims"):
        schema = pipeline.stage_schema(table)            # curated for claims, build for the stage tables
        assert con.execute(f"SELECT count(*) FROM {schema}.casefacts_{table}").fetchone()[0] == 0
    failed = con.execute("SELECT count(*) FROM ops.llm_calls WHERE status = 'failed'").fetchone()[0]
    assert failed == 6
    assert gate_dataset(claims, con.execute("SELECT * FROM curated.scotus_cases").df()) == [
        "casefacts_claims: the dataset is empty"]


def test_audit_command_against_the_warehouse(db, tmp_path, capsys):
    from caseforge.cli import main

    claims = tmp_path / "claims.json"
    claims.write_text(json.dumps([
        {"claim": "Poor defendants need not get a lawyer.", "case_name": ["Betts v. Brady"],
         "overruling_case": "Gideon v. Wainwright", "label": "Overruled"},
        {"claim": "Segregated schools are fine.", "case_name": ["Brown v. Board of Education of Topeka"],
         "overruling_case": "Plessy v. Ferguson", "label": "Overruled"},
        {"claim": "Some rule.", "case_name": ["Roe v. Wade"], "overruling_case": "Dobbs v. Jackson Women's Health "
         "Organization", "label": "Overruled"},
    ]))
    assert main(["audit", "casefacts", "--claims", str(claims), "--format", "json", "--db", str(db)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["overruling_pairs"] == 3 and report["summary"]["overruling_pairs_checked"] == 2
    assert [(d["case_name"], d["overruling_case"], d["case_decided"], d["overruling_decided"])
            for d in report["date_inverted"]] == [
        ("Brown v. Board of Education of Topeka", "Plessy v. Ferguson", "1954-05-17", "1896-05-18")]
    assert {u["case_name"] for u in report["unmatched_case_names"]} == {
        "Roe v. Wade", "Dobbs v. Jackson Women's Health Organization"}


def test_a_same_case_decision_whose_reasoning_the_gate_rejects_does_not_stand(db):
    """The resolution of a contradiction and the verdict of a redundancy are decisions about claims: when the content
    gate quarantines the reasoning behind one, it is not applied. The contradiction stays unresolved (both claims
    leave, as when its resolution failed) and its merged correction is not added; the redundant pair keeps both."""
    from casefacts_double import MERGED_CORRECTION, REDUNDANT, SAME_CASE_CONTRADICTIONS, ScriptedLegalBackendDouble

    from caseforge.tasks.casefacts.embed import get_embedder

    class DegenerateSameCaseReasonsDouble(ScriptedLegalBackendDouble):
        """Test double: the scripted answers, with the reasoning of the same-case resolution and of the verdict
        that finds a redundancy one word over and over."""

        def answer(self, template, user):
            reply = super().answer(template, user)
            if template.endswith("same_case_resolution.j2") or reply.get("redundant"):
                reply["reason"] = "claim claim claim claim claim claim claim claim"
            return reply

    con = connect(db)
    config = BuildConfig(**DEMO_CONFIG)
    report = StageReport("casefacts (degenerate same-case reasons)")
    backends = {"generator": DegenerateSameCaseReasonsDouble(config.generator_model),
                "validator": DegenerateSameCaseReasonsDouble(config.validator_model)}
    pipeline.run_pipeline(pipeline.BuildContext(con, None, report, config, backends, get_embedder(config.embedder)))

    kept = {claim for (claim,) in con.execute("SELECT claim FROM build.casefacts_kept_claims").fetchall()}
    [contradicting], [redundant] = SAME_CASE_CONTRADICTIONS, REDUNDANT
    assert not kept & contradicting and MERGED_CORRECTION not in kept
    assert redundant <= kept
    assert con.execute("SELECT count(*) FROM build.casefacts_same_case_pairs WHERE applied").fetchone() == (0,)
    assert report.counts["same_case.decisions_rejected"] == 2
    reasons = [r for (r,) in con.execute("SELECT reason FROM ops.quarantine WHERE table_name = "
                                         "'casefacts_same_case_pairs'").fetchall()]
    assert len(reasons) == 2 and all("expect_column_values_to_not_repeat_one_token on reason" in r for r in reasons)
