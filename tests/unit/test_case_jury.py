from caseforge.tasks.case.method import PERSONAS, Vote, sample_jury, tally

LABELS = ["A", "B", "C", "D"]


def test_majority_wins_and_confidence_is_split_or_unanimous():
    split = tally([Vote("x", "B", 0.2), Vote("y", "B", 0.3), Vote("z", "A", 1.0)], LABELS)
    assert split.choice == "B" and split.confidence == "split" and split.tie_break is None
    unanimous = tally([Vote("x", "C", 0.5), Vote("y", "C", 0.5), Vote("z", "C", 0.5)], LABELS)
    assert unanimous.choice == "C" and unanimous.confidence == "unanimous"


def test_three_way_tie_goes_to_highest_summed_confidence_not_first_vote():
    verdict = tally([Vote("x", "A", 0.4), Vote("y", "D", 0.9), Vote("z", "B", 0.6)], LABELS)
    assert verdict.choice == "D" and verdict.tie_break == "confidence" and verdict.confidence == "split"


def test_tie_with_equal_confidence_goes_to_lowest_option_letter():
    verdict = tally([Vote("x", "C", 0.5), Vote("y", "B", 0.5), Vote("z", None, 0.0)], LABELS)
    assert verdict.choice == "B" and verdict.tie_break == "option_order"


def test_invalid_votes_do_not_count_and_no_valid_vote_gives_no_answer():
    verdict = tally([Vote("x", "A", 0.1), Vote("y", None, 0.0), Vote("z", "E", 1.0)], LABELS)
    assert verdict.choice == "A" and verdict.confidence == "split"
    assert tally([Vote("x", None, 0.0)], LABELS).choice is None


def test_jury_is_three_distinct_personas_and_repeatable_for_a_seed():
    jury = sample_jury(7, "mbe_12")
    assert len(set(jury)) == 3 and set(jury) <= set(PERSONAS)
    assert sample_jury(7, "mbe_12") == jury
    assert len({tuple(sample_jury(seed, "mbe_12")) for seed in range(20)}) > 1


def test_a_jury_that_never_answered_is_not_blamed_for_its_answers():
    from caseforge.tasks.case.method import Vote, no_verdict_reason

    failed = [Vote(p, None, 0.0, "context overflow: prompt of 9000 tokens", answered=False) for p in ("a", "b", "c")]
    assert no_verdict_reason(failed) == ("no juror answered: all 3 juror calls failed "
                                         "(context overflow: prompt of 9000 tokens)")
    mixed = failed[:1] + [Vote("b", None, 0.0, "vote 'E' names no option"), Vote("c", None, 0.0, "vote 'F' ...")]
    assert no_verdict_reason(mixed) == "no juror stated a valid option (1 of 3 juror calls failed)"


def test_juror_evidence_is_cut_until_the_prompt_fits_the_context_window(tmp_path):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from legal_doubles import ScriptedLegalBackendDouble

    from caseforge.stage_report import StageReport
    from caseforge.tasks.case.method import SNIPPET_CHARS, Hypothesis, Problem, Snippet, run_jury
    from caseforge.warehouse.connection import connect

    class WindowedDouble(ScriptedLegalBackendDouble):
        """Test double of a backend with a context window; a token is a whitespace-separated word."""

        context_window = 700

        def __init__(self):
            super().__init__()
            self.sizes = []

        def count_tokens(self, request):
            return sum(len(m["content"].split()) for m in request.messages)

        def complete_batch(self, requests):
            self.sizes += [self.count_tokens(r) for r in requests]
            return super().complete_batch(requests)

    long_text = " ".join(f"word{i}" for i in range(400))          # 400 words cut to SNIPPET_CHARS characters
    problem = Problem("q1", "Which rule applies to a contract made by a minor?",
                      [Hypothesis(label, f"Option text {label} about minors and contracts") for label in "ABCD"])
    evidence = {("q1", label): [Snippet(f"p{label}{n}", long_text, 1.0) for n in range(3)] for label in "ABCD"}
    backend, report = WindowedDouble(), StageReport("jury")
    verdicts = run_jury(connect(tmp_path / "w.duckdb"), backend, [problem], evidence, 7, report)
    assert verdicts["q1"][0].choice in "ABCD"
    assert report.counts["juror_evidence_cut_to_fit"] == 3 and len(backend.sizes) == 3
    assert all(size + 400 <= WindowedDouble.context_window for size in backend.sizes)   # JUROR_PARAMS max_tokens
    assert len(long_text) > SNIPPET_CHARS


def test_a_juror_whose_reasoning_is_degenerate_is_not_counted_and_a_jury_of_them_gives_no_verdict(tmp_path):
    """A vote is only as good as the reasoning behind it: a juror who writes ". . . . ." or one word over and over
    casts no vote (quarantined with the rule it broke); a jury that only wrote such reasoning gives no verdict."""
    import json
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from legal_doubles import ScriptedLegalBackendDouble

    from caseforge.stage_report import StageReport
    from caseforge.tasks.case.method import Hypothesis, Problem, Snippet, no_verdict_reason, run_jury
    from caseforge.warehouse.connection import connect

    class DegenerateJurorsDouble(ScriptedLegalBackendDouble):
        """Test double of a backend whose jurors named in `degenerate` write degenerate reasoning."""

        def __init__(self, degenerate: set[str]):
            super().__init__()
            self.degenerate = degenerate

        def _juror(self, system, user):
            reply = json.loads(super()._juror(system, user))
            if any(PERSONAS[persona].split(".")[0] in system for persona in self.degenerate):
                reply["reasoning"] = "option option option option option option option option"
            return json.dumps(reply)

    problem = Problem("q1", "Which rule applies to a contract made by a minor?",
                      [Hypothesis(label, f"Option text {label} about minors and contracts") for label in "ABCD"])
    evidence = {("q1", label): [Snippet(f"p{label}", f"minors and contracts {label}", 1.0)] for label in "ABCD"}
    jury = sample_jury(7, "q1")

    con = connect(tmp_path / "w.duckdb")
    report = StageReport("jury", run_id=1)
    verdict, votes = run_jury(con, DegenerateJurorsDouble({jury[0]}), [problem], evidence, 7, report)["q1"]
    assert verdict.choice in LABELS and sum(verdict.counts.values()) == 2, verdict
    [dropped] = [v for v in votes if v.persona == jury[0]]
    assert dropped.choice is None and dropped.reason.startswith("reasoning rejected by the content gate: "), dropped
    assert "expect_column_values_to_not_repeat_one_token" in dropped.reason, dropped.reason
    assert report.counts["juror_reasoning_rejected"] == 1
    assert con.execute("SELECT source_key FROM ops.quarantine WHERE table_name = 'case_juror_votes'").fetchall() == [
        (f"q1|{jury[0]}",)]

    report = StageReport("jury", run_id=2)
    verdict, votes = run_jury(connect(tmp_path / "w2.duckdb"), DegenerateJurorsDouble(set(jury)), [problem], evidence,
                              7, report)["q1"]
    assert verdict.choice is None
    assert no_verdict_reason(votes) == ("no juror stated a valid option (3 of 3 votes' reasoning rejected by the "
                                        "content gate)")
