"""The text checks of caseforge.textchecks as great-expectations expectations, so that a suite in expectations/
names them like any other expectation and the gate quarantines the rows that fail them, with the rule as the
reason. Importing this module registers them (it imports great_expectations: the gate imports it lazily).

    expect_column_values_to_have_enough_words        min_words
    expect_column_values_to_be_mostly_letters        min_share
    expect_column_values_to_not_repeat_one_token     max_share, min_tokens
    expect_column_values_to_not_repeat_ngrams        n, max_share, min_ngrams
    expect_column_values_to_not_run_one_character    max_run
    expect_column_values_to_not_contain_bracket_markup (none)
    expect_column_values_to_not_echo_prompt          templates (globs under prompts/), n
    expect_column_pair_values_to_not_leak_answer     column_A (question), column_B (answer), max_words_after,
                                                     max_shared_tokens

Missing values pass (as in every column map expectation): a failed call has no text, and says so elsewhere.
"""
from __future__ import annotations

from typing import Callable

import pandas as pd
from great_expectations.execution_engine import PandasExecutionEngine
from great_expectations.expectations.expectation import ColumnMapExpectation, ColumnPairMapExpectation
from great_expectations.expectations.metrics import ColumnMapMetricProvider, column_condition_partial
from great_expectations.expectations.metrics.map_metric_provider.column_pair_condition_partial import (
    column_pair_condition_partial,
)
from great_expectations.expectations.metrics.map_metric_provider.column_pair_map_metric_provider import (
    ColumnPairMapMetricProvider,
)

from caseforge import textchecks


def _column_metric(name: str, check: Callable[..., bool], keys: tuple[str, ...]) -> str:
    """Register a column map metric that passes a value when `check(value, **its keys)` is true."""
    metric = f"column_values.caseforge_{name}"

    def _pandas(cls, column, **kwargs):
        params = {key: kwargs[key] for key in keys}
        for key, value in params.items():
            if isinstance(value, list):
                params[key] = tuple(value)
        return column.map(lambda value: check(str(value), **params))

    type(f"CaseforgeMetric_{name}", (ColumnMapMetricProvider,), {
        "condition_metric_name": metric, "condition_value_keys": keys,
        "_pandas": column_condition_partial(engine=PandasExecutionEngine)(_pandas)})
    return metric


class ExpectColumnValuesToHaveEnoughWords(ColumnMapExpectation):
    """Each value has at least `min_words` words (a CJK character counts as one)."""
    min_words: int
    map_metric = _column_metric("enough_words", textchecks.enough_words, ("min_words",))
    success_keys = ("min_words", "mostly")


class ExpectColumnValuesToBeMostlyLetters(ColumnMapExpectation):
    """Letters are at least `min_share` of each value's visible characters (not mostly digits or punctuation)."""
    min_share: float
    map_metric = _column_metric("mostly_letters", textchecks.mostly_letters, ("min_share",))
    success_keys = ("min_share", "mostly")


class ExpectColumnValuesToNotRepeatOneToken(ColumnMapExpectation):
    """No token is more than `max_share` of a value's tokens (values of at least `min_tokens` tokens)."""
    max_share: float
    min_tokens: int
    map_metric = _column_metric("no_dominant_token", textchecks.no_dominant_token, ("max_share", "min_tokens"))
    success_keys = ("max_share", "min_tokens", "mostly")


class ExpectColumnValuesToNotRepeatNgrams(ColumnMapExpectation):
    """At most `max_share` of a value's n-grams repeat an earlier one (values of at least `min_ngrams` n-grams)."""
    n: int
    max_share: float
    min_ngrams: int
    map_metric = _column_metric("no_repeated_ngrams", textchecks.no_repeated_ngrams, ("n", "max_share", "min_ngrams"))
    success_keys = ("n", "max_share", "min_ngrams", "mostly")


class ExpectColumnValuesToNotRunOneCharacter(ColumnMapExpectation):
    """No character other than a space repeats more than `max_run` times in a row."""
    max_run: int
    map_metric = _column_metric("no_character_run", textchecks.no_character_run, ("max_run",))
    success_keys = ("max_run", "mostly")


class ExpectColumnValuesToNotContainBracketMarkup(ColumnMapExpectation):
    """Square brackets only as citations and quotations use them ("[GC]", "[T]he", "[4]"), not a chat template's
    tokens, a list, JSON or markdown: textchecks.no_bracket_markup."""
    map_metric = _column_metric("no_bracket_markup", textchecks.no_bracket_markup, ())
    success_keys = ("mostly",)


class ExpectColumnValuesToNotEchoPrompt(ColumnMapExpectation):
    """A value shares no run of `n` tokens with the instructions of the prompt templates `templates`."""
    templates: list[str]
    n: int
    map_metric = _column_metric("no_prompt_echo", textchecks.no_prompt_echo, ("templates", "n"))
    success_keys = ("templates", "n", "mostly")


class _AnswerLeakMetric(ColumnPairMapMetricProvider):
    condition_metric_name = "column_pair_values.caseforge_no_answer_leak"
    condition_domain_keys = ("column_A", "column_B", "ignore_row_if")
    condition_value_keys = ("max_words_after", "max_shared_tokens")

    @column_pair_condition_partial(engine=PandasExecutionEngine)
    def _pandas(cls, column_A, column_B, max_words_after, max_shared_tokens, **kwargs):
        return pd.Series([textchecks.no_answer_leak(str(q), str(a), max_words_after, max_shared_tokens)
                          for q, a in zip(column_A, column_B)], index=column_A.index)


class ExpectColumnPairValuesToNotLeakAnswer(ColumnPairMapExpectation):
    """The question (column_A) does not carry its answer (column_B): textchecks.no_answer_leak."""
    max_words_after: int
    max_shared_tokens: int
    ignore_row_if: str = "either_value_is_missing"
    map_metric = _AnswerLeakMetric.condition_metric_name
    success_keys = ("max_words_after", "max_shared_tokens", "ignore_row_if", "mostly")
