"""The evaluation run on a hand-made items file with the scripted LLM double: tables, re-runs, report."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from aquaechr_eval_doubles import ScriptedAqevalBackendDouble  # noqa: E402

from caseforge.tasks.aquaechr.eval import store  # noqa: E402
from caseforge.tasks.aquaechr.eval.items import build_passages, load_annotation_file  # noqa: E402
from caseforge.tasks.aquaechr.eval.nli import CrossEncoderNLI, make_nli  # noqa: E402
from caseforge.tasks.aquaechr.eval.pipeline import RunConfig, evaluate  # noqa: E402
from caseforge.tasks.aquaechr.eval.systems import SYSTEMS  # noqa: E402
from caseforge.warehouse.connection import connect  # noqa: E402

ITEMS = HERE.parent / "fixtures" / "aquaechr_eval" / "items.json"


def load():
    items, problems = load_annotation_file(ITEMS)
    return items, problems, build_passages(items, [])


def test_items_file_loading_and_rejections():
    items, problems, passages = load()
    assert [i.item_id for i in items] == ["q1", "q2"]
    assert problems == [("q3", "record lacks a question or an answer")]
    assert items[0].gold == ["001-900001#10", "001-900001#11", "001-900002#5"]
    # leading ". " of a released paragraph is dropped; generation-cited paragraphs join the corpus
    assert passages.passages["001-900001#10"].shown() == \
        "Alpha v. Utopia; § 10: The Court removes a statement from protection only in extreme cases."
    assert passages.passages["001-900003#7"].text == "Prison conditions must meet a minimum level of severity."
    assert len(passages.passages) == 5
    assert passages.description.startswith("0 numbered paragraphs from curated.echr_paragraphs + 5 cited passages")


def run(con, system, backend, k=2):
    items, problems, passages = load()
    judge = make_nli("llm", con, backend)
    config = RunConfig(system, "double", backend.model, judge.name, "items.json", k=k)
    return evaluate(con, config, items, passages, backend, judge, None, problems)


def test_rtg_vanilla_rows_scores_and_rerun_without_duplicates_or_new_calls(db_path):
    con = connect(db_path)
    backend = ScriptedAqevalBackendDouble()
    result = run(con, "rtg-vanilla", backend)
    first_calls = len(backend.asked)
    assert result.problems == ["q3: record lacks a question or an answer"]
    q1 = result.scored[0]
    # the double copies the first sentence of Doc 1 and Doc 2 and cites a non-existent Doc 42
    assert [[c.doc for c in s.citations] for s in q1.output.sentences] == [[1], [1, 2], [42]]
    assert q1.scores["invalid_citations"] == 1
    assert q1.scores["citations_per_query"] == 2.0
    assert q1.attribution == [True, True, None]
    rows = con.execute("SELECT count(*) FROM eval.item_outputs WHERE eval_run_id = ?", [result.run_id]).fetchone()
    assert rows == (2,)
    again = run(con, "rtg-vanilla", ScriptedAqevalBackendDouble())
    assert again.run_id == result.run_id
    assert con.execute("SELECT count(*) FROM eval.item_outputs").fetchone() == (2,)
    assert con.execute("SELECT count(*) FROM eval.runs").fetchone() == (1,)
    assert first_calls > 0
    stored = dict(con.execute("SELECT metric, value FROM eval.metrics WHERE eval_run_id = ?",
                              [result.run_id]).fetchall())
    assert stored["citation_f1"] == pytest.approx(result.metrics["citation_f1"])
    assert stored["mauve"] is None


def test_second_run_makes_no_backend_call(db_path):
    con = connect(db_path)
    run(con, "posthoc-rarr", ScriptedAqevalBackendDouble())
    counting = ScriptedAqevalBackendDouble()
    run(con, "posthoc-rarr", counting)
    assert counting.asked == []


@pytest.mark.parametrize("system", SYSTEMS)
def test_every_system_runs_and_reports(db_path, tmp_path, system):
    con = connect(db_path)
    result = run(con, system, ScriptedAqevalBackendDouble(), k=3)
    assert len(result.scored) == 2 and all(s.output.status == "ok" for s in result.scored)
    if system == "closed-book":
        assert result.metrics["citation_f1"] is None and result.metrics["citations_per_query"] == 0.0
    else:
        assert result.metrics["citations_per_query"] > 0
    if system == "rtg-llatrieval":
        # q1: the missing-information search brings Gamma § 7 in, the double is satisfied in round 2
        assert [c["sufficient"] for c in result.scored[0].output.trace["checks"]] == [False, True]
        assert "001-900003#7" in result.scored[0].output.shown
        # q2 already shows Gamma § 7: the search finds nothing new, so the loop stops without asking again
        assert result.scored[1].output.trace["checks"][0]["no_new_passages"] is True
        assert len(result.scored[1].output.trace["checks"]) == 1
    if system == "posthoc-rarr":
        assert result.scored[0].output.trace["edited_sentences"] == 1
    md, csv_path = store.write_report(con, tmp_path)
    text = md.read_text()
    assert f"| {system} | double-aqeval-1 (double) |" in text
    assert "MAUVE (fluency) is not computed" in text
    assert csv_path.read_text().count(result.run_id) >= 10


def test_cross_encoder_absent_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="NLI cross-encoder folder not found"):
        CrossEncoderNLI(tmp_path / "nope")
    with pytest.raises(ValueError, match="unknown NLI judge"):
        make_nli("magic")


def test_llm_judge_failure_is_recorded_and_left_out(db_path):
    con = connect(db_path)

    class BrokenJudgeDouble(ScriptedAqevalBackendDouble):
        def answer(self, request):
            if request.template_id.endswith("nli.j2"):
                return "I think so"
            return super().answer(request)

    result = run(con, "rtg-vanilla", BrokenJudgeDouble())
    assert result.metrics["nli_failed"] > 0
    assert result.metrics["claim_recall"] is None
    note = con.execute("SELECT note FROM eval.metrics WHERE eval_run_id = ? AND metric = 'nli_failed'",
                       [result.run_id]).fetchone()[0]
    assert "left out of their denominators" in note


@pytest.mark.slow
def test_bertscore_with_the_local_minilm_model():
    from caseforge.tasks.aquaechr.eval.metrics import TokenEmbedder, bertscore_f1
    from caseforge.tasks.aquaechr.eval.pipeline import default_bertscore_model

    path, reason = default_bertscore_model()
    if path is None:
        pytest.skip(reason)
    embed = TokenEmbedder(path)
    same = bertscore_f1("The Court found a violation [Doc 1].", "The Court found a violation.", embed)
    other = bertscore_f1("Bananas are yellow fruit.", "The Court found a violation.", embed)
    assert same == pytest.approx(1.0, abs=1e-5)
    assert other < same


@pytest.mark.parametrize("system", ["rtg-vanilla", "posthoc-rarr"])
def test_all_nli_questions_are_asked_in_one_batch(db_path, system):
    from aquaechr_eval_doubles import SubstringNLIDouble

    from caseforge.tasks.aquaechr.eval.nli import MemoNLI

    class CountingNLIDouble(SubstringNLIDouble):
        calls = 0

        def entails(self, pairs):
            CountingNLIDouble.calls += 1
            return super().entails(pairs)

    con = connect(db_path)
    items, problems, passages = load()
    inner = CountingNLIDouble()
    config = RunConfig(system, "double", "double-aqeval-1", inner.name, "items.json", k=3)
    result = evaluate(con, config, items, passages, ScriptedAqevalBackendDouble(), MemoNLI(inner), None, problems)
    assert CountingNLIDouble.calls == 1
    assert result.metrics["claim_recall"] is not None


def _untrained_nli_folder(tmp_path, labels):
    """A cross-encoder folder made from the local MiniLM weights with a fresh 3-way head (wiring only)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from caseforge.tasks.aquaechr.eval.pipeline import default_bertscore_model

    path, reason = default_bertscore_model()
    if path is None:
        pytest.skip(reason)
    folder = tmp_path / "nli"
    model = AutoModelForSequenceClassification.from_pretrained(
        path, num_labels=3, id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)})
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(path).save_pretrained(folder)
    return folder


@pytest.mark.slow
def test_cross_encoder_finds_the_entailment_label_and_answers_per_pair(tmp_path):
    judge = CrossEncoderNLI(_untrained_nli_folder(tmp_path, ["contradiction", "entailment", "neutral"]))
    assert judge.entail_index == 1
    verdicts = judge.entails([("The Court found a violation.", "A violation was found."), ("a", "b")])
    assert len(verdicts) == 2 and all(isinstance(v, bool) for v in verdicts)
    with pytest.raises(ValueError, match="no 'entailment' label"):
        CrossEncoderNLI(_untrained_nli_folder(tmp_path / "x", ["a", "b", "c"]))
