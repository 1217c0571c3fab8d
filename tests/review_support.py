"""Shared by the review tests: a CaseFacts build of 40 claims on real sample cases from replayed model answers
(tests/fixtures/replay/casefacts_review.jsonl, recorded by `record_review_replay` with the scripted double below),
and the fixture of the two annotators' labels (tests/fixtures/review/casefacts_labels.json)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REPLAY_FILE = FIXTURES / "replay" / "casefacts_review.jsonl"
LABELS_FILE = FIXTURES / "review" / "casefacts_labels.json"

from casefacts_double import DEMO_CASE_FILES, DEMO_CONFIG, ScriptedLegalBackendDouble  # noqa: E402

# The six demo cases and fourteen more sample cases, all loaded from the real samples.
REVIEW_CASE_FILES = DEMO_CASE_FILES + [
    "1940_1955.312us100.json", "1940_1955.323us214.json", "1960.6.json", "1963.110.json", "1965.61.json",
    "1968.492.json", "1940_1955.328us549.json", "1940_1955.332us46.json", "1956.342.json", "1965.847.json",
    "1966.9.json", "1971.70-18.json", "1974.73-6650.json", "1977.77-25.json"]

TOPICS = ("search warrants", "jury selection", "union elections", "tax refunds", "school prayer", "press freedom",
          "voting districts", "death sentences", "drug testing", "land takings", "public housing", "church property",
          "river pollution", "bank mergers", "prison mail", "war powers", "patent fees", "postal rates",
          "border stops", "farm subsidies", "radio licences", "mine safety", "child custody", "rail tariffs")
RULES = ("Courts must apply the ordinary rule to disputes about {topic}.",
         "A state law on {topic} must give people a fair hearing first.",
         "Federal power over {topic} does not reach purely local conduct.")


class ReviewBuildDouble(ScriptedLegalBackendDouble):
    """Test double: the scripted CaseFacts double, and for a case its script does not know, claims in plain
    words about a topic drawn from the case's text (no party, no year), so that 20 cases give over 40 claims."""

    name = "review-build-double"

    def answer(self, template: str, user: str) -> dict:
        found = super().answer(template, user)
        if template.endswith("generate_claims.j2") and found["claims"][0].startswith("A rule that no scripted"):
            digest = int(hashlib.sha256(user.encode()).hexdigest(), 16)
            topic = TOPICS[digest % len(TOPICS)]
            return {"claims": [rule.format(topic=topic) for rule in RULES]}
        return found


def load_review_cases(con, samples_dir: Path, scratch: Path) -> None:
    """The twenty cases (and the demo cases' legacy rows) into a fresh warehouse, without Prefect."""
    import pandas as pd

    from caseforge.archive import RawArchive
    from caseforge.stage_report import StageReport
    from caseforge.tasks.oyez import ingest
    from casefacts_double import DEMO_CASE_NAMES

    archive, report = RawArchive(con), StageReport("review cases")
    table = pd.read_csv(samples_dir / "oyez" / "legacy_justice_table.csv", dtype=str, keep_default_na=False)
    legacy = scratch / "legacy_review.csv"
    table[table["name"].isin(DEMO_CASE_NAMES)].to_csv(legacy, index=False)
    ingest.import_legacy(con, archive, None, legacy, report)
    payloads = ingest.archive_replay_batch(archive, [samples_dir / "oyez" / "cases" / f for f in REVIEW_CASE_FILES])
    ingest.load_cases(con, None, ingest.parse_payloads(con, None, payloads, report), report)
    assert not report.failures, report.failures


def build_claims(con, backends=None):
    """The CaseFacts pipeline on the loaded cases: with the replay file unless `backends` are given."""
    from caseforge.llm.backends.replay import ReplayBackend
    from caseforge.stage_report import StageReport
    from caseforge.tasks.casefacts import pipeline
    from caseforge.tasks.casefacts.config import BuildConfig
    from caseforge.tasks.casefacts.embed import HashingEmbedder

    config = BuildConfig(**DEMO_CONFIG)
    backends = backends or {role: ReplayBackend(getattr(config, f"{role}_model"), replay_file=REPLAY_FILE)
                            for role in ("generator", "validator")}
    report = StageReport("casefacts (review)")
    claims = pipeline.run_pipeline(pipeline.BuildContext(con, None, report, config, backends, HashingEmbedder()))
    assert report.failures == [], report.failures
    return claims


def record_review_replay(samples_dir: Path, scratch: Path, out: Path = REPLAY_FILE) -> int:
    """Record the replay file (tests/request_identities.py record): the double's answers on the twenty cases."""
    from caseforge.llm.backends.replay import export_replay
    from caseforge.tasks.casefacts.config import BuildConfig
    from caseforge.warehouse.connection import connect

    config = BuildConfig(**DEMO_CONFIG)
    con = connect(scratch / "record.duckdb")
    load_review_cases(con, samples_dir, scratch)
    build_claims(con, {"generator": ReviewBuildDouble(config.generator_model),
                       "validator": ReviewBuildDouble(config.validator_model)})
    written = export_replay(con, out)
    con.close()
    return written


def labels() -> dict:
    return json.loads(LABELS_FILE.read_text(encoding="utf-8"))
