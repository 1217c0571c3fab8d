"""Test doubles for the CaseFacts builder: a scripted LLM that knows six sample cases, and helpers that
load those cases into a fresh warehouse. Used to record tests/fixtures/replay/casefacts.jsonl."""
from __future__ import annotations

import json
import re
from pathlib import Path

from caseforge.archive import RawArchive
from caseforge.llm.types import Completion
from caseforge.stage_report import StageReport
from caseforge.tasks.oyez import ingest

DEMO_CASE_FILES = ["1850_1900.163us537.json", "1940_1955.347us483.json", "1940_1955.316us455.json",
                   "1962.155.json", "1989.88-1569.json", "2008.08-205.json"]
REPLAY_FILE = Path(__file__).resolve().parent / "fixtures" / "replay" / "casefacts.jsonl"
SCRIPTED_REASON = "The test double answers from its script."

# Case recognised from its summary text → the claims the double "generates" for it.
CLAIM_BANK = [
    ("school", [
        "Laws that keep races apart in public schools are not allowed even when the facilities are equal.",
        "Separating children in public schools by race makes their schooling unequal.",
        "Separating children in public schools by race can still give them equal schooling.",
    ]),
    ("Plessy", [
        "Laws that keep races apart in public places are allowed as long as the facilities are equal.",
        "Separate railway cars for different races do not break the promise of equal protection.",
    ]),
    ("Gideon", [
        "A state must give a free lawyer to every poor person charged with a serious crime.",
        "The right to a lawyer in criminal trials binds the states, not only the federal courts.",
        "People accused of crimes can be tried fairly without any lawyer at all.",
    ]),
    ("Betts", [
        "A state does not have to give a free lawyer to every poor person charged with a serious crime.",
        "Whether a poor defendant needs a free lawyer can depend on special circumstances such as youth.",
        "A state court does not have to give a free lawyer to every poor person charged with a serious crime.",
    ]),
    ("Citizens United", [
        "The government may not ban companies from spending their general funds on election ads for candidates.",
        "Spending money on elections is a kind of political speech that the First Amendment protects.",
    ]),
    ("Michigan", [
        "A state may ban companies from spending their general funds on election ads for candidates.",
        "Company spending on elections is a kind of political speech that the First Amendment protects.",
    ]),
]
UNSUPPORTED = {"People accused of crimes can be tried fairly without any lawyer at all."}
SAME_CASE_CONTRADICTIONS = {frozenset({
    "Separating children in public schools by race makes their schooling unequal.",
    "Separating children in public schools by race can still give them equal schooling."})}
MERGED_CORRECTION = "Separating children in public schools by race denies them equal schooling."
REDUNDANT = {frozenset({
    "A state does not have to give a free lawyer to every poor person charged with a serious crime.",
    "A state court does not have to give a free lawyer to every poor person charged with a serious crime."})}
CROSS_CONTRADICTIONS = {
    frozenset({"A state does not have to give a free lawyer to every poor person charged with a serious crime.",
               "A state must give a free lawyer to every poor person charged with a serious crime."}),
    frozenset({"Laws that keep races apart in public places are allowed as long as the facilities are equal.",
               "Laws that keep races apart in public schools are not allowed even when the facilities are equal."}),
    frozenset({"A state may ban companies from spending their general funds on election ads for candidates.",
               "The government may not ban companies from spending their general funds on election ads for "
               "candidates."}),
}
OVERLAPS = {frozenset({
    "Company spending on elections is a kind of political speech that the First Amendment protects.",
    "Spending money on elections is a kind of political speech that the First Amendment protects."})}
FLIPS = [(" does not have to ", " must "), (" must ", " need not "), (" may not ", " may "), (" may ", " may not "),
         (" are allowed", " are not allowed"), (" are not allowed", " are allowed"), (" do not break", " break"),
         (" binds ", " does not bind "), (" depend ", " never depend "), (" denies ", " does not deny "),
         (" is a kind of", " is not a kind of")]


def _field(text: str, label: str) -> str:
    match = re.search(rf"^{label}: (.*)$", text, re.MULTILINE)
    return match.group(1).strip() if match else ""


def _negate(claim: str) -> str:
    padded = f" {claim} "
    for old, new in FLIPS:
        if old in padded:
            return padded.replace(old, new, 1).strip()
    return "It is wrong to say that " + claim[0].lower() + claim[1:]


class ScriptedLegalBackendDouble:
    """Test double: answers CaseFacts prompts from a script over six known cases; counts its calls."""

    name = "scripted-legal-double"
    batch_size = 50

    def __init__(self, model: str):
        self.model = model
        self.calls = 0

    def complete_batch(self, requests):
        self.calls += len(requests)
        return [Completion(text=json.dumps(self.answer(r.template_id, r.messages[-1]["content"])),
                           prompt_tokens=10, completion_tokens=5) for r in requests]

    def answer(self, template: str, user: str) -> dict:
        """The scripted answer of one request (its reason a sentence, as the content gate requires of a model's)."""
        step = template.rsplit("/", 1)[-1].removesuffix(".j2")
        one, two = _field(user, "CLAIM 1"), _field(user, "CLAIM 2")
        pair = frozenset({one, two})
        if step == "generate_claims":
            for marker, claims in CLAIM_BANK:
                if marker.lower() in user.lower():
                    return {"claims": claims}
            return {"claims": ["A rule that no scripted case covers still needs plain words."]}
        if step == "check_factuality":
            claim = _field(user, "STATEMENT")
            return {"supported": claim not in UNSUPPORTED, "reason": SCRIPTED_REASON}
        if step in ("same_case_contradiction", "cross_contradiction"):
            known = SAME_CASE_CONTRADICTIONS if step.startswith("same") else CROSS_CONTRADICTIONS
            return {"contradict": pair in known, "reason": SCRIPTED_REASON}
        if step == "same_case_resolution":
            return {"choice": "merged", "corrected_claim": MERGED_CORRECTION, "reason": SCRIPTED_REASON}
        if step == "same_case_redundancy":
            return {"redundant": pair in REDUNDANT, "better": 1 if len(one) <= len(two) else 2, "reason": SCRIPTED_REASON}
        if step == "cross_overlap":
            return {"overlap": pair in OVERLAPS, "reason": SCRIPTED_REASON}
        if step == "resolve_overruling":
            first = re.search(r"CASE 1: (.*) \(decided ([\d-]+)\)", user)
            second = re.search(r"CASE 2: (.*) \(decided ([\d-]+)\)", user)
            if "Plessy" in user:   # a wrong, date-inverted proposal the temporal rule must reject
                newer_is_one = first.group(2) > second.group(2)
                return {"verdict": "case1_overruled" if newer_is_one else "case2_overruled", "reason": SCRIPTED_REASON}
            older_is_one = first.group(2) < second.group(2)
            return {"verdict": "case1_overruled" if older_is_one else "case2_overruled", "reason": SCRIPTED_REASON}
        if step == "merge_overlap":
            return {"action": "merge", "merged_claim": "Spending money on elections is protected political speech.",
                    "reason": SCRIPTED_REASON}
        if step == "negate_claim":
            return {"negation": _negate(_field(user, "TRUE STATEMENT"))}
        if step == "rewrite_principle":
            return {"principle": _field(user, "STATEMENT")}
        raise AssertionError(f"the double has no script for {template}")


DEMO_CASE_NAMES = {"Plessy v. Ferguson", "Brown v. Board of Education of Topeka (1)", "Betts v. Brady",
                   "Gideon v. Wainwright", "Austin v. Michigan Chamber of Commerce",
                   "Citizens United v. Federal Election Commission"}


def load_demo_cases(con, samples_dir: Path, scratch: Path | None = None) -> None:
    """The six demo cases and their legacy rows (dispositions) into a fresh warehouse, without Prefect.

    With `scratch` (a folder), only the demo cases' legacy rows are imported, which is much faster."""
    archive = RawArchive(con)
    report = StageReport("demo cases")
    legacy = samples_dir / "oyez" / "legacy_justice_table.csv"
    if scratch is not None:
        import pandas as pd
        table = pd.read_csv(legacy, dtype=str, keep_default_na=False)
        legacy = scratch / "legacy_demo.csv"
        table[table["name"].isin(DEMO_CASE_NAMES)].to_csv(legacy, index=False)
    ingest.import_legacy(con, archive, None, legacy, report)
    payloads = ingest.archive_replay_batch(archive, [samples_dir / "oyez" / "cases" / f for f in DEMO_CASE_FILES])
    frame = ingest.parse_payloads(con, None, payloads, report)
    ingest.load_cases(con, None, frame, report)
    assert not report.failures, report.failures


DEMO_CONFIG = dict(embedder="hashing", min_positives=2, test_fraction=0.2, seed=13,
                   generator_model="Qwen/Qwen3-Next-80B-A3B-Instruct", validator_model="google/gemma-3-27b-it")


def run_with_double(con, embedder_kind: str = "hashing"):
    """The whole pipeline on the demo cases with the scripted double; returns (claims, report, backends)."""
    from caseforge.tasks.casefacts import pipeline
    from caseforge.tasks.casefacts.config import BuildConfig
    from caseforge.tasks.casefacts.embed import get_embedder

    config = BuildConfig(**{**DEMO_CONFIG, "embedder": embedder_kind})
    report = StageReport("casefacts (double)")
    backends = {"generator": ScriptedLegalBackendDouble(config.generator_model),
                "validator": ScriptedLegalBackendDouble(config.validator_model)}
    ctx = pipeline.BuildContext(con, None, report, config, backends, get_embedder(config.embedder))
    return pipeline.run_pipeline(ctx), report, backends


def record_replay(samples_dir: Path, db_path: Path, out: Path = REPLAY_FILE) -> int:
    """Run the double with both embedders (their screened pairs differ) and export every answer."""
    from caseforge.llm.backends.replay import export_replay
    from caseforge.warehouse.connection import connect

    con = connect(db_path)
    load_demo_cases(con, samples_dir)
    for kind in ("hashing", "sentence-transformers"):
        run_with_double(con, kind)
    written = export_replay(con, out)
    con.close()
    return written
