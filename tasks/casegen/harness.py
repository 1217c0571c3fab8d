"""The CaseGen release's harness tasks: draft the section, scored by ROUGE-L over characters and by caseforge's LLM
judge, as `caseforge eval casegen` does with its default budgets (caseforge.release.harness writes them into the
release)."""
from __future__ import annotations

from caseforge.release.harness import HarnessSpec, mark
from caseforge.tasks.casegen.eval.evaluate import EvalConfig, generation_requests, judge_request, load_items
from caseforge.tasks.casegen.eval.judge import OVERALL, dimension_names, reply_schema
from caseforge.tasks.casegen.items import TASKS

VARIANT = "generate"
SPLIT = "casegen_items"
NOTES = """Scored as `caseforge eval casegen` scores with its default budgets (inputs cut from the middle beyond 8000
characters for the drafter and 6000 for the judge, 1024 new tokens each): `rougeL_char_f1`, ROUGE-L F1 over
characters, and with a judge model (`judge=`) `judge_overall`, the judge's overall score from 1 to 10 read from its
reply to caseforge's own judge prompt; each overall and per task (`/<task>`). A draft cut off at the token limit
fails (left out of the means, counted in `n_failed`); lm-eval does not report the cut, so there such a draft is
scored. caseforge refuses a judge of the drafter's model family and applies its content gate to drafts and judge
replies; these tasks do neither: choose the judge yourself."""
OPTIONS = {"task": "one of defense, facts, reasoning, judgment (default: all)",
           "after": "YYYY-MM-DD: only items whose judgment is dated after that day (undated items are left out)",
           "judge": "inspect: the judge model (e.g. openai-api/local/NAME); lm-eval: judge_model, judge_base_url "
                    "(and judge_api_key_env) in --metadata; none: no judge score",
           "structured": "inspect: send the judge reply's JSON schema (default false)"}


def harness_spec(con) -> HarnessSpec:
    """Every item's drafting prompt and its judge's prompt (the draft a «candidate» mark, the reference read from
    the release), as caseforge eval renders them."""
    items = load_items(con, None, None)
    config = EvalConfig()
    requests, cuts = generation_requests(items, config)
    rows = []
    for item, request in zip(items, requests):
        judge = judge_request(item["item_id"], item, mark("candidate"), config, reference=mark("reference"))
        rows.append({"variant": VARIANT, "split": SPLIT, "id": item["item_id"], "messages": request.messages,
                     "judge": judge.messages, "extra": {"task": item["task"], "input_cut": cuts[item["item_id"]].cut}})
    variants = {VARIANT: {"max_tokens": config.max_new_tokens, "schema": None,
                          "judge_max_tokens": config.judge_max_new_tokens,
                          "judge_schema": {task: reply_schema(task) for task in TASKS},
                          "judge_overall_names": dimension_names(OVERALL)}}
    return HarnessSpec(rows, variants, "item_id", "reference", SPLIT, NOTES, OPTIONS)
