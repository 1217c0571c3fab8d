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
