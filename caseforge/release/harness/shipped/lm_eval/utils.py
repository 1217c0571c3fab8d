"""The lm-evaluation-harness side of this caseforge release's harness tasks: the dataset (read from the release
after caseforge_harness.open_release checked it), the per-sample scores and their aggregation.

    lm-eval run --include_path harness/lm_eval --tasks caseforge_<dataset> --model local-chat-completions \
      --model_args base_url=http://HOST:PORT/v1/chat/completions,model=MODEL,tokenizer_backend=None \
      --apply_chat_template --output_path OUT --log_samples [--metadata '{"after": "YYYY-MM-DD"}']

Options in --metadata: after, and per benchmark split (CaseFacts), system (AQuAECHR), task, judge_model,
judge_base_url, judge_api_key_env, judge_max_tokens (CaseGen). lm-eval hands every task of a run the same metadata
(the model's arguments among them), so a task reads its own options and leaves the others; `after` may then name a
day per benchmark: {"after": {"casefacts": "1950-01-01", "casegen": "2018-12-31"}}. lm-eval does not say whether
a reply was cut off at max_gen_toks, so a cut CaseGen draft is scored here (caseforge and the inspect task fail it).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))
import caseforge_harness as ch  # noqa: E402  (the release's own modules, in harness/)
import caseforge_scoring as rules  # noqa: E402



def _dataset(dataset: str, variant: str, options: dict, only: dict | None = None, split: str | None = None):
    import datasets

    release = ch.open_release(HERE)
    if release.dataset != dataset:
        raise ch.ReleaseRefused(f"this task is {dataset}'s, the release is {release.dataset}")
    spec = release.variant(variant)
    docs = []
    after = options.get("after")
    if isinstance(after, dict):            # one run of several releases: {"<dataset>": "YYYY-MM-DD", ...}
        after = after.get(dataset)
    for sample in ch.load_samples(release, variant, split, after, only):
        system = "\n\n".join(m["content"] for m in sample["messages"] if m["role"] == "system")
        user = "\n\n".join(m["content"] for m in sample["messages"] if m["role"] == "user")
        docs.append({"id": sample["id"], "split": sample["split"], "date": sample["date"] or "", "system": system,
                     "user": user, "target": str(sample["target"]), "variant": variant,
                     "spec": json.dumps(spec, ensure_ascii=False),
                     "extra": json.dumps(sample["extra"], ensure_ascii=False),
                     "judge": json.dumps(sample["judge"], ensure_ascii=False),
                     "options": json.dumps({k: v for k, v in options.items() if k.startswith("judge_")})})
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})


def casefacts_dataset(**options):
    return _dataset("casefacts", "closed-book", options, split=options.get("split"))


def aquaechr_dataset(**options):
    return _dataset("aquaechr", options.get("system") or "rtg-vanilla", options)


def casegen_dataset(**options):
    return _dataset("casegen", "generate", options, only={"task": options["task"]} if options.get("task") else None)


# ---------------------------------------------------------------- per sample


def casefacts_results(doc: dict, results: list[str]) -> dict:
    predicted = rules.casefacts_verdict(results[0], json.loads(doc["spec"])["schema"])
    pair = (doc["target"], predicted)
    return {"verdict_accuracy": float(predicted == doc["target"]), "verdict_macro_f1": pair,
            **{f"verdict_accuracy/{label}": pair for label in rules.VERDICTS},
            **{f"verdict_f1/{label}": pair for label in rules.VERDICTS}}


def aquaechr_results(doc: dict, results: list[str]) -> dict:
    extra = json.loads(doc["extra"])
    reply = rules.reply_object(results[0], json.loads(doc["spec"])["schema"])
    if reply is None:
        return {"rouge_l": None, "citation_f1": None, "citation_precision": None, "citation_recall": None,
                "n_failed": 1}
    found = rules.aquaechr_scores(reply["answer"], doc["target"], extra["gold"], extra.get("shown"))
    return {"rouge_l": found["rouge_l"], "citation_f1": found.get("citation_f1"),
            "citation_precision": found.get("citation_precision"),
            "citation_recall": found.get("citation_recall"), "n_failed": 0}


def _judge(doc: dict, draft: str) -> float | None:
    options = json.loads(doc["options"])
    if not options.get("judge_model"):
        return None
    if not options.get("judge_base_url"):
        raise ch.ReleaseRefused("judge_model needs judge_base_url (the judge's OpenAI-compatible /v1 address)")
    spec, sample = json.loads(doc["spec"]), {"judge": json.loads(doc["judge"])}
    key = os.environ.get(options["judge_api_key_env"]) if options.get("judge_api_key_env") else None
    reply, finish = ch.chat(options["judge_base_url"], options["judge_model"], ch.judge_messages(sample, draft),
                            int(options.get("judge_max_tokens") or spec["judge_max_tokens"]), api_key=key)
    if finish == "length" or not (reply or "").strip():
        return None
    return rules.judge_score(reply, spec["judge_overall_names"])


TASKS = ("defense", "facts", "reasoning", "judgment")


def casegen_results(doc: dict, results: list[str]) -> dict:
    """Every metric of every task is there for each sample (lm-eval wants the same keys): a per-task metric holds
    (the sample's task, its score) and its aggregation keeps its own task's."""
    task = json.loads(doc["extra"])["task"]
    draft = results[0] or ""
    failed = not draft.strip()
    rouge = None if failed else rules.rouge_l_chars(doc["target"], draft)
    overall = None if failed else _judge(doc, draft)
    return {"rougeL_char_f1": rouge, "judge_overall": overall, "n_failed": int(failed),
            **{f"rougeL_char_f1/{t}": (task, rouge) for t in TASKS},
            **{f"judge_overall/{t}": (task, overall) for t in TASKS}}


# ---------------------------------------------------------------- aggregation over the samples


def scored_mean(values: list) -> float:
    """The mean over the samples that have a score (a failed one has None); NaN when none has."""
    found = rules.mean(values)
    return float("nan") if found is None else found


def count(values: list) -> float:
    return float(sum(values))


def _verdict(name: str):
    def aggregate(pairs: list) -> float:
        found = rules.verdict_metrics([tuple(p) for p in pairs]).get(name)
        return float("nan") if found is None else found
    return aggregate


def _of_task(task: str):
    def aggregate(pairs: list) -> float:
        return scored_mean([value for kind, value in pairs if kind == task])
    return aggregate


verdict_macro_f1 = _verdict("verdict_macro_f1")
for _label in rules.VERDICTS:
    globals()[f"verdict_accuracy_{_label}"] = _verdict(f"verdict_accuracy/{_label}")
    globals()[f"verdict_f1_{_label}"] = _verdict(f"verdict_f1/{_label}")
for _task in TASKS:
    globals()[f"mean_of_{_task}"] = _of_task(_task)
