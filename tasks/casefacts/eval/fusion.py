"""The CaseFacts hybrid's fusion: a default chosen on the released train split, or one tuned on a train file
given to the run — never on the claims the run reports.

DEFAULT_FUSION was chosen by caseforge.retrieval.tuning on the released train split (5,794 claims, 5,279
scored under the paper's gold rule; samples warehouse of 3,017 cases: 200 with facts+question+conclusion, 2,812
legacy facts-only, 5 partial), parts BM25 on Snowball stems and the packaged all-MiniLM-L6-v2, depth 100:
min-max score fusion 0.4·bm25 + 0.6·dense gave recall@1/5/10 0.135/0.279/0.357 there, against BM25
0.106/0.196/0.240 and dense 0.108/0.247/0.316 (plain RRF k=60: 0.123/0.248/0.320, below dense at 5
and 10). `--tune-on TRAIN` repeats the choice on another train file (and warehouse).
"""
from __future__ import annotations

from pathlib import Path

from caseforge.retrieval.hybrid import DEFAULT_DEPTH, Fusion
from caseforge.retrieval.tuning import TuningResult, tune_fusion
from caseforge.tasks.casefacts.eval.casenames import CaseNameIndex
from caseforge.tasks.casefacts.eval.claims import load_claims

DEFAULT_FUSION = Fusion("score", (0.4, 0.6), depth=DEFAULT_DEPTH)


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def tune_on_claims(path: Path, names: CaseNameIndex, corpus_ids: set[str], parts, evaluated: list[str],
                   gold_rule: str, missing_gold: str | None) -> TuningResult:
    """Tune the fusion of `parts` on the claims of `path` (same gold rule and policy as the run).

    Refuses a tuning file that shares a claim with the evaluated ones: the fusion must not see them."""
    from caseforge.tasks.casefacts.eval.retrieval import prepare

    claims, _problems = load_claims(Path(path))
    shared = {_key(c.claim) for c in claims} & {_key(text) for text in evaluated}
    if shared:
        raise ValueError(f"--tune-on {path} shares {len(shared)} claim(s) with the evaluated claims: the fusion "
                         "must be tuned on the train split only")
    active = [p for p in prepare(claims, names, corpus_ids, missing_gold, gold_rule) if p.skip_reason is None]
    queries = [p.claim.claim for p in active]
    depth = DEFAULT_FUSION.depth
    rankings = [part.search(queries, depth) for part in parts]
    return tune_fusion([part.name for part in parts], rankings, [p.gold.cases for p in active],
                       [len(p.gold.cases) + len(p.gold.missing) for p in active])
