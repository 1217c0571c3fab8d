"""The CaseFacts release's harness tasks: the closed-book verdict, prompted and scored as `caseforge eval casefacts
--system closed-book` does (caseforge.release.harness writes them into the release)."""
from __future__ import annotations

import pandas as pd

from caseforge.llm.parsing import schema_for
from caseforge.release.harness import HarnessSpec, mark
from caseforge.retrieval.corpora import scotus_case_names, scotus_corpus
from caseforge.tasks.casefacts.eval import retrieval
from caseforge.tasks.casefacts.eval.casenames import CaseNameIndex
from caseforge.tasks.casefacts.eval.claims import claims_from_rows
from caseforge.tasks.casefacts.eval.systems import (VERDICT_PARAMS, VerdictWithCases, case_names_of,
                                                    closed_book_request)

VARIANT = "closed-book"
NOTES = """Scored as `caseforge eval casefacts --system closed-book` scores (the default gold rule, `paper`): the model
sees the claim and the name of every case in the warehouse the release was built from, and replies
{"verdict", "cases"}; a reply that is not that JSON, or states no label, counts as a wrong verdict. Metrics:
`verdict_accuracy` (overall and per gold label), `verdict_f1/<LABEL>` and `verdict_macro_f1`. The cited cases are not
scored here (their names are matched to the warehouse's cases by caseforge's name index): use `caseforge eval` for the
evidence metrics. Where caseforge knows a model's context window is too small for every name it narrows the list;
these tasks always show the whole list. The split scored is `test` (`split=train` or `split=all` for the others)."""
OPTIONS = {"split": "test (default), train or all", "after": "YYYY-MM-DD: only claims whose newest evidence case "
           "was decided after that day", "structured": "inspect: send the reply's JSON schema (vLLM, OpenAI; "
           "default false, as llama.cpp's server refuses OpenAI's schema form)"}


def claims_file_rows(frame: pd.DataFrame) -> list[dict]:
    """The release's claims in the claims file format `caseforge eval casefacts --claims` reads: case_name the
    claim's own cases (the evidence cases less the overruling ones), overruling_case the overruling ones."""
    rows = []
    for row in frame.itertuples(index=False):
        overruling = list(row.overruling_case_names)
        rows.append({"claim": row.claim, "label": row.label, "overruling_case": overruling,
                     "case_name": [n for n in row.evidence_case_names if n not in overruling]})
    return rows


def harness_spec(con, splits: dict[str, pd.DataFrame]) -> HarnessSpec:
    """The closed-book samples of every split: the claims caseforge eval would score (a claim whose gold cases
    are all missing from the warehouse is left out, as the `paper` rule leaves it out)."""
    corpus = scotus_corpus(con)
    names = CaseNameIndex(scotus_case_names(con))
    shown = sorted(set(case_names_of(corpus, names).values()))
    template = closed_book_request("", mark("claim"), shown).messages
    rows = []
    for split, frame in sorted(splits.items()):
        claims, problems = claims_from_rows(claims_file_rows(frame))
        if problems:
            raise ValueError(f"casefacts: {split}: rows the evaluation cannot read: {problems[:3]}")
        for claim_id, prepared in zip(frame["claim_id"], retrieval.prepare(claims, names, set(corpus.ids))):
            if prepared.skip_reason is None:
                rows.append({"variant": VARIANT, "split": split, "id": str(claim_id), "messages": template})
    variants = {VARIANT: {"max_tokens": VERDICT_PARAMS.max_tokens, "schema": schema_for(VerdictWithCases)}}
    default = "test" if "test" in splits else sorted(splits)[0]
    return HarnessSpec(rows, variants, "claim_id", "label", default, NOTES, OPTIONS)
