"""CaseFacts systems on a hand-made five-case corpus: retrieval-only through the CLI, LLM systems with a test double."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from legal_doubles import ScriptedLegalBackendDouble  # noqa: E402

from caseforge.llm.config import Backends  # noqa: E402

from caseforge.retrieval import Corpus, build_retriever  # noqa: E402
from caseforge.stage_report import StageReport  # noqa: E402
from caseforge.tasks.casefacts.eval import retrieval as casefacts_eval, systems as casefacts_llm
from caseforge.tasks.casefacts.eval.casenames import CaseNameIndex  # noqa: E402
from caseforge.tasks.casefacts.eval.claims import load_claims  # noqa: E402
from caseforge.warehouse.connection import connect  # noqa: E402

CLAIMS = Path(__file__).resolve().parent.parent / "fixtures" / "casefacts" / "claims_tiny.json"
CASES = [
    ("101", "Riley v. California", "Police arrested Riley and searched his cell phone without a warrant. "
                                   "The question was whether the search of a phone's digital contents incident to "
                                   "arrest needs a warrant. The Court held a warrant is generally required."),
    ("102", "Obergefell v. Hodges", "Same-sex couples challenged state bans on their marriage. The Court held "
                                    "the Fourteenth Amendment requires states to license marriage between two people "
                                    "of the same sex."),
    ("103", "Plessy v. Ferguson", "Louisiana required separate railway cars by race. The Court upheld separate "
                                  "but equal facilities."),
    ("104", "Brown v. Board of Education", "Black children were denied admission to white public schools. The "
                                           "Court held that racial segregation in public schools is unconstitutional."),
    ("105", "New York State Rifle & Pistol Association Inc. v. Bruen", "New York required proper cause for a "
                                                                       "license to carry a handgun in public."),
]


class _Session:
    def __init__(self, con):
        self.con, self.report = con, StageReport("test")


def _prepared():
    claims, problems = load_claims(CLAIMS)
    assert problems == [("claim-00004", "empty or missing claim")]
    names = CaseNameIndex([(cid, name) for cid, name, _ in CASES])
    corpus = Corpus.from_pairs("tiny", [(cid, text) for cid, _, text in CASES])
    return casefacts_eval.prepare(claims, names, set(corpus.ids)), corpus, names


def test_gold_outside_the_corpus_is_skipped_or_counted_as_missed():
    prepared, corpus, names = _prepared()
    skipped = [p for p in prepared if p.skip_reason]
    assert [p.claim.item_id for p in skipped] == ["claim-00003"]
    assert "Marbury v. Madison" in skipped[0].skip_reason
    # the paper's rule (default): the overruled claim's gold is its own case only
    assert prepared[2].gold.cases == [frozenset({"103"})]
    claims, _ = load_claims(CLAIMS)
    # caseforge's rule: the overruling case joins the gold evidence
    ours = casefacts_eval.prepare(claims, names, set(corpus.ids), gold_rule="caseforge")
    assert ours[2].gold.cases == [frozenset({"103"}), frozenset({"104"})]
    as_miss = casefacts_eval.prepare(claims, names, set(corpus.ids), missing_gold="miss", gold_rule="caseforge")
    # every claim is scored; one with no gold case in the corpus at all scores as a miss
    assert all(p.skip_reason is None for p in as_miss)
    assert casefacts_eval.score_claim(as_miss[3], ["101", "102"])["recall@10"] == 0.0


def test_retrieval_only_scores(tmp_path):
    prepared, corpus, _ = _prepared()
    items = casefacts_eval.evaluate_retrieval(prepared, build_retriever("bm25", corpus, persist=False), k=3)
    metrics = casefacts_eval.summarise(items)
    assert metrics["n"] == 3 and metrics["n_skipped_gold_missing"] == 1
    riley = next(i for i in items if i.item_id == "claim-00000")
    assert riley.predicted["cases"][0] == "101" and riley.scores["recall@1"] == 1.0
    assert 0 <= metrics["recall@1"] <= metrics["recall@5"] <= metrics["recall@10"] <= 1


@pytest.mark.parametrize("system", ["closed-book", "retrieve-verify", "case"])
def test_llm_systems_with_a_test_double(system, tmp_path):
    prepared, corpus, names = _prepared()
    double = ScriptedLegalBackendDouble()
    backends = Backends(fixed={"system": double})
    session = _Session(connect(tmp_path / "w.duckdb"))
    items = casefacts_llm.run_llm_system(session, system, prepared, corpus, names,
                                         lambda kind: build_retriever(kind, corpus, persist=False),
                                         backends, retriever="bm25",
                                         k=3, max_rounds=2, seed=3)
    assert [i.status for i in items] == ["ok", "ok", "ok", "skipped"], [i.reason for i in items]
    metrics = casefacts_eval.summarise(items)
    assert metrics["n"] == 3 and "verdict_score" in metrics and "verdict_accuracy/SUPPORTED" in metrics
    for item in items[:3]:
        assert item.predicted["verdict"] in ("SUPPORTED", "REFUTED", "OVERRULED")
        assert item.scores["verdict_score"] == item.scores["evidence_score"] * item.scores["verdict_accuracy"]
    if system == "retrieve-verify":
        # the double cites the first two cases shown, which the retriever ranked
        assert items[0].predicted["cases"][0] == "101"
    asked = double.asked
    casefacts_llm.run_llm_system(session, system, prepared, corpus, names,
                                 lambda kind: build_retriever(kind, corpus, persist=False),
                                 backends, retriever="bm25",
                                 k=3, max_rounds=2, seed=3)
    assert double.asked == asked   # a re-run is answered from the cache


@pytest.mark.slow
def test_cli_eval_casefacts_bm25_json(tmp_path, shared_server_cli_env):
    import subprocess
    import sys

    db = tmp_path / "w.duckdb"
    con = connect(db)
    con.executemany("INSERT INTO curated.scotus_legacy (case_id, name, facts, raw_sha256) VALUES (?, ?, ?, 'x')",
                    [(int(cid), name, text) for cid, name, text in CASES])
    con.close()
    done = subprocess.run(
        [sys.executable, "-m", "caseforge", "eval", "casefacts", "--claims", str(CLAIMS), "--system", "bm25",
         "--format", "json", "--k", "3", "--db", str(db), "--index-dir", str(tmp_path / "idx"),
         "--out-dir", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, env=shared_server_cli_env)
    code, out = done.returncode, done.stdout
    metrics = json.loads(out)          # stdout holds the JSON alone: the run's summary line goes to stderr
    assert "eval casefacts:bm25 (run " in done.stderr
    assert code == 1   # the empty claim is a recorded failure, so the run reports it
    assert metrics["n"] == 3 and metrics["n_skipped_gold_missing"] == 1 and metrics["n_failed"] == 1
    assert {"recall@1", "recall@5", "recall@10", "evidence_score", "evidence_score_f1"} <= set(metrics)
    assert len(list((tmp_path / "out").glob("*.metrics.json"))) == 1
    con = connect(db)
    assert con.execute("SELECT count(*) FROM eval.item_outputs").fetchone()[0] == 5


class WindowedLegalBackendDouble(ScriptedLegalBackendDouble):
    """Test double of a backend that knows its context window: a token is a whitespace-separated word."""

    def __init__(self, context_window: int):
        super().__init__()
        self.context_window = context_window
        self.prompts: list[str] = []

    def count_tokens(self, request) -> int:
        return sum(len(m["content"].split()) for m in request.messages)

    def complete_batch(self, requests):
        self.prompts += [r.messages[-1]["content"] for r in requests]
        return super().complete_batch(requests)


def test_closed_book_case_list_is_narrowed_to_fit_the_context_window(tmp_path):
    prepared, corpus, names = _prepared()
    wide = WindowedLegalBackendDouble(context_window=100_000)
    session = _Session(connect(tmp_path / "wide.duckdb"))
    casefacts_llm.run_llm_system(session, "closed-book", prepared, corpus, names,
                                 lambda kind: build_retriever(kind, corpus, persist=False), Backends(fixed={"system": wide}),
                                 retriever="bm25", k=3, max_rounds=2, seed=3)
    assert all("New York State Rifle" in prompt and "Plessy" in prompt for prompt in wide.prompts)

    narrow = WindowedLegalBackendDouble(context_window=485)     # prompt ~75 words + 400 for the answer + a few names
    session = _Session(connect(tmp_path / "narrow.duckdb"))
    items = casefacts_llm.run_llm_system(session, "closed-book", prepared, corpus, names,
                                         lambda kind: build_retriever(kind, corpus, persist=False),
                                         Backends(fixed={"system": narrow}), retriever="bm25", k=3, max_rounds=2,
                                         seed=3)
    riley = next(i for i in items if i.item_id == "claim-00000")
    assert 0 < riley.predicted["case_names_shown"] < len(CASES)
    assert session.report.counts["closed_book_case_list_narrowed"] >= 1
    for prompt in narrow.prompts:
        listed = prompt.split("list\nof valid cases:\n")[1].split("\nReply as")[0].splitlines()
        assert listed == sorted(listed)                      # alphabetical: the order gives no rank away
        assert len(prompt.split()) + 400 <= 485
    riley_prompt = next(p for p in narrow.prompts if "cell phone" in p or "phone" in p)
    assert "Riley v. California" in riley_prompt            # the best-ranked case made the cut


def test_cli_prints_the_gold_rule_and_the_corpus_composition_with_every_result(tmp_path, capsys):
    from caseforge.cli import main

    db = tmp_path / "w.duckdb"
    con = connect(db)
    # two API cases with all three summaries, one with facts only, the rest legacy facts-only rows
    con.execute("INSERT INTO curated.scotus_cases (case_id, name, facts, question, conclusion, raw_sha256, updated_at) "
                "VALUES (101, 'Riley v. California', ?, 'Does a phone search need a warrant?', 'Yes.', 'x', now()), "
                "(102, 'Obergefell v. Hodges', ?, 'Must states license such marriages?', 'Yes.', 'x', now()), "
                "(103, 'Plessy v. Ferguson', ?, NULL, NULL, 'x', now())", [t for _, _, t in CASES[:3]])
    con.executemany("INSERT INTO curated.scotus_legacy (case_id, name, facts, raw_sha256) VALUES (?, ?, ?, 'x')",
                    [(int(cid), name, text) for cid, name, text in CASES[3:]])
    con.close()
    args = ["eval", "casefacts", "--claims", str(CLAIMS), "--system", "bm25", "--k", "3", "--db", str(db),
            "--index-dir", str(tmp_path / "idx"), "--out-dir", str(tmp_path / "out")]
    main(args)
    out = capsys.readouterr().out
    assert "gold rule: paper: the claim's case_name only" in out
    assert "corpus: 5 documents: 2 facts+question+conclusion, 1 api_partial, 2 facts_only" in out
    main(args + ["--gold-rule", "caseforge", "--missing-gold", "miss"])
    out = capsys.readouterr().out
    assert "gold rule: caseforge: the claim's case_name plus every overruling_case" in out
    assert "count as not found" in out


def test_casefacts_lexical_retrieval_stems_by_default_and_says_so():
    from caseforge.tasks.casefacts.eval.run import DEFAULT_STEMMER, Options

    # a BM25 baseline as the usual toolkits run it (Lucene/Pyserini's English analyzer, bm25s with PyStemmer)
    assert DEFAULT_STEMMER == "english"
    assert Options("c.json", "bm25").params()["stemmer"] == "english"
    assert Options("c.json", "bm25", stemmer=None).params()["stemmer"] == "none"
    assert "stemmer" not in Options("c.json", "dense").params()


TRAIN_CLAIMS = [
    {"claim": "Searching the data on an arrested person's phone needs a warrant.", "case_name": ["Riley v. California"],
     "overruling_case": None, "label": "Supported"},
    {"claim": "A state must license a marriage between two men.", "case_name": ["Obergefell v. Hodges"],
     "overruling_case": None, "label": "Supported"},
    {"claim": "Public schools may not separate children by race.", "case_name": ["Brown v. Board of Education"],
     "overruling_case": None, "label": "Supported"},
]


def test_casefacts_hybrid_fusion_is_tuned_on_the_train_claims_only(tmp_path, capsys):
    from caseforge.cli import main
    from caseforge.tasks.casefacts.eval.fusion import tune_on_claims

    prepared, corpus, names = _prepared()
    hybrid = build_retriever("hybrid", corpus, persist=False)
    # the claims a run reports may not be used to choose its fusion
    with pytest.raises(ValueError, match="train split only"):
        tune_on_claims(CLAIMS, names, set(corpus.ids), hybrid.parts, [p.claim.claim for p in prepared], "paper", None)
    train = tmp_path / "train.json"
    train.write_text(json.dumps(TRAIN_CLAIMS))
    tuned = tune_on_claims(train, names, set(corpus.ids), hybrid.parts, [p.claim.claim for p in prepared],
                           "paper", None)
    assert tuned.n_queries == 3 and tuned.fusion.method in ("score", "rrf") and len(tuned.fusion.weights) == 2
    assert set(tuned.parts_recall) == {"bm25", "dense"}
    db = tmp_path / "w.duckdb"
    con = connect(db)
    con.executemany("INSERT INTO curated.scotus_legacy (case_id, name, facts, raw_sha256) VALUES (?, ?, ?, 'x')",
                    [(int(cid), name, text) for cid, name, text in CASES])
    con.close()
    main(["eval", "casefacts", "--claims", str(CLAIMS), "--system", "hybrid", "--tune-on", str(train), "--db", str(db),
          "--index-dir", str(tmp_path / "idx"), "--out-dir", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert "retriever: hybrid of bm25 (" in out and "stemmer english" in out
    assert "tuned on 3 claims over 45 fusions" in out and "(train.json)" in out
    main(["eval", "casefacts", "--claims", str(CLAIMS), "--system", "hybrid", "--db", str(db),
          "--index-dir", str(tmp_path / "idx"), "--out-dir", str(tmp_path / "out")])
    assert "fusion: min-max normalised scores, 0.4·bm25 + 0.6·dense" in capsys.readouterr().out
