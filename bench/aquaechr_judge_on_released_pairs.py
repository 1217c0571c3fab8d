"""Can a model judge AQuAECHR pairs? The build's quality judge, run on pairs the AQuAECHR authors released
(they passed the paper's judge, and experts scored their strategy about 4.4-4.8 of 5), counting how many
the judge keeps. A judge fit for the build keeps most of them.

Run: .venv/bin/python bench/aquaechr_judge_on_released_pairs.py [--pairs N] [--model M ...] [--quick]
(reads CASEFORGE_SAMPLES, default ../shared/samples; models default to the two packaged GGUF models)
--quick: 5 pairs judged by a scripted judge double instead of a model (CI checks that the bench still runs).

It goes through the build's own path: the judge prompt (prompts/aquaechr/judge.j2), its reply schema, run_job
and the low-quality rule (a score at or below 3 on any dimension). Answers are kept in a throw-away
warehouse, so nothing is cached between runs. Prints, per model, the scores of every pair and the share kept.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections import Counter
from pathlib import Path

from caseforge.llm import config as llm_config
from caseforge.llm.jobs import run_job
from caseforge.llm.types import Completion
from caseforge.tasks.aquaechr.filters import DEFAULT_LOW_QUALITY_AT, DIMENSIONS, judge_request, low_quality
from caseforge.tasks.aquaechr.schemas import JudgeVerdict
from caseforge.warehouse.connection import open_warehouse

PACKAGED = ("gemma-3-270m", "smollm2-135m-instruct")   # the default judge first


def released_pairs(limit: int) -> list[dict]:
    samples = Path(os.environ.get("CASEFORGE_SAMPLES", Path(__file__).resolve().parents[2] / "shared" / "samples"))
    path = samples / "aquaechr" / "expert_annotations_rag.json"
    return json.loads(path.read_text(encoding="utf-8"))[:limit]


class ScriptedJudgeBackendDouble:
    """Test double for the judge model (--quick): every fourth pair scored 3 on conciseness, the others 4, 4, 4."""

    name = "judge-double"
    model = "judge-double"
    batch_size = 16

    def complete_batch(self, requests):
        return [Completion(text=json.dumps({"analysis": "A scripted verdict.", "comprehensiveness": 4,
                                            "conciseness": 3 if number % 4 == 3 else 4, "answer_fluency": 4}),
                           prompt_tokens=100, completion_tokens=30, latency_s=0.0)
                for number, _ in enumerate(requests)]


def judge(model: str, pairs: list[dict]) -> tuple[list[dict | None], list[str]]:
    """Each pair's scores (None where the judge's reply failed), and the reasons of the failures."""
    backend = (ScriptedJudgeBackendDouble() if model == ScriptedJudgeBackendDouble.model
               else llm_config.backend("aquaechr-judge", role="judge", llm="llamacpp", model=model))
    requests = [judge_request(f"pair-{p['question_number']}", p["question"], p["answer"]) for p in pairs]
    with tempfile.TemporaryDirectory() as tmp, open_warehouse(Path(tmp) / "bench.duckdb") as con:
        result = run_job(con, "aquaechr-judge", backend, requests, JudgeVerdict, fanout=False)
    scores = []
    for request in requests:
        verdict = result.outputs.get(request.key)
        scores.append(None if verdict is None else {d: getattr(verdict, d) for d in DIMENSIONS})
    return scores, [failure.reason for failure in result.failures.values()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--model", action="append", help="llama.cpp model name or GGUF path (repeatable)")
    parser.add_argument("--quick", action="store_true", help="5 pairs, a scripted judge double instead of a model")
    args = parser.parse_args()
    if args.quick:
        args.pairs, args.model = 5, [ScriptedJudgeBackendDouble.model]
    pairs = released_pairs(args.pairs)
    print(f"{len(pairs)} released AQuAECHR pairs; low quality at a score <= {DEFAULT_LOW_QUALITY_AT}")
    for model in args.model or PACKAGED:
        scores, failures = judge(model, pairs)
        answered = [s for s in scores if s is not None]
        kept = [s for s in answered if not low_quality(s)]
        patterns = Counter(tuple(s[d] for d in DIMENSIONS) for s in answered)
        print(f"\n{model}: {len(answered)} of {len(pairs)} judged, {len(kept)} kept "
              f"({len(kept) / len(pairs):.0%} of released pairs)")
        print("  scores (comprehensiveness, conciseness, answer_fluency): count")
        for pattern, count in patterns.most_common():
            print(f"  {pattern}: {count}")
        for reason, count in Counter(reason[:100] for reason in failures).most_common():
            print(f"  failed ({count}): {reason}")


if __name__ == "__main__":
    main()
