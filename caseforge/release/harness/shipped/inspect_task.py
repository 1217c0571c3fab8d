"""The inspect_ai task of this caseforge release (CaseFacts, AQuAECHR or CaseGen: harness/pin.json says which).

    LOCAL_API_KEY=x LOCAL_BASE_URL=http://HOST:PORT/v1 inspect eval harness/inspect_task.py --model openai-api/local/MODEL

Options (-T name=value): after=YYYY-MM-DD (only items decided after that day), structured=true (send the reply's JSON
schema; vLLM and OpenAI take it, llama.cpp's server does not), and per benchmark: split= (CaseFacts), system=
(AQuAECHR), task= and judge=MODEL (CaseGen; judge_max_tokens=N). The release is checked before anything is scored
(caseforge_harness.open_release); the prompts are the ones caseforge's own templates rendered.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig, ResponseSchema, get_model
from inspect_ai.scorer import SampleScore, Score, Target, mean, metric, scorer
from inspect_ai.solver import TaskState, generate
from inspect_ai.util import JSONSchema

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import caseforge_harness as ch  # noqa: E402  (the release's own modules, beside this file)
import caseforge_scoring as rules  # noqa: E402

NAN = math.nan
OWN_OPTIONS = {"casefacts": {"split"}, "aquaechr": {"system"}, "casegen": {"task", "judge", "judge_max_tokens"}}


def _messages(sample: dict) -> list:
    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser}
    return [kinds[m["role"]](content=m["content"]) for m in sample["messages"]]


def _schema(schema: dict | None, structured: bool) -> ResponseSchema | None:
    if not structured or not schema:
        return None
    return ResponseSchema(name=str(schema.get("title") or "reply"), json_schema=JSONSchema.model_validate(schema))


def _dataset(release: ch.Release, samples: list[dict]) -> MemoryDataset:
    return MemoryDataset([Sample(id=s["id"], input=_messages(s), target=str(s["target"]),
                                 metadata={"split": s["split"], "date": s["date"], "extra": s["extra"],
                                           "judge": s["judge"]}) for s in samples],
                         name=f"caseforge-{release.dataset}-{release.pin['version']}")


@metric
def breakdown(name: str, by: str):
    """The mean of the metric `name` per value of the sample's `by` (its gold label, its task): `name/<value>`."""
    def compute(scores: list[SampleScore]) -> dict[str, float]:
        groups: dict[str, list[float]] = {}
        for s in scores:
            groups.setdefault(str((s.score.metadata or {}).get(by)), []).append(float(s.score.value))
        return {f"{name}/{key}": sum(v) / len(v) for key, v in sorted(groups.items())}
    return compute


@metric
def verdict_f1():
    """verdict_f1/<LABEL> and verdict_macro_f1 over the claims (caseforge_harness.verdict_metrics)."""
    def compute(scores: list[SampleScore]) -> dict[str, float]:
        pairs = [(s.score.metadata["gold"], s.score.metadata["predicted"]) for s in scores]
        found = rules.verdict_metrics(pairs)
        return {k: v for k, v in found.items() if k.startswith("verdict_") and "accuracy" not in k and v is not None}
    return compute


@metric
def total():
    def compute(scores: list[SampleScore]) -> float:
        return float(sum(float(s.score.value) for s in scores))
    return compute


@scorer(metrics={"verdict_accuracy": [mean(), breakdown("verdict_accuracy", "gold"), verdict_f1()]})
def casefacts_verdict(schema: dict):
    async def score(state: TaskState, target: Target) -> Score:
        predicted = rules.casefacts_verdict(state.output.completion, schema)
        return Score(value={"verdict_accuracy": float(predicted == target.text)}, answer=predicted,
                     metadata={"gold": target.text, "predicted": predicted})
    return score


@scorer(metrics={"rouge_l": [mean()], "citation_f1": [mean()], "citation_precision": [mean()],
                 "citation_recall": [mean()], "failed": [total()]})
def aquaechr_answer(schema: dict, cites: bool):
    async def score(state: TaskState, target: Target) -> Score:
        extra = state.metadata["extra"]
        reply = rules.reply_object(state.output.completion, schema)
        empty = {"rouge_l": NAN, "citation_f1": NAN, "citation_precision": NAN, "citation_recall": NAN}
        if reply is None:
            return Score(value={**empty, "failed": 1.0}, explanation="the reply is not the answer's JSON")
        found = rules.aquaechr_scores(reply["answer"], target.text, extra["gold"], extra["shown"] if cites else None)
        return Score(value={**empty, **found, "failed": 0.0}, answer=reply["answer"])
    return score


@scorer(metrics={"rougeL_char_f1": [mean(), breakdown("rougeL_char_f1", "task")],
                 "judge_overall": [mean(), breakdown("judge_overall", "task")], "failed": [total()]})
def casegen_draft(variant: dict, judge: str | None, judge_max_tokens: int, structured: bool):
    async def score(state: TaskState, target: Target) -> Score:
        kind = state.metadata["extra"]["task"]
        draft = state.output.completion
        if state.output.stop_reason == "max_tokens" or not draft.strip():
            why = "the draft was cut off at max_tokens" if draft.strip() else "no draft"
            return Score(value={"rougeL_char_f1": NAN, "judge_overall": NAN, "failed": 1.0}, explanation=why,
                         metadata={"task": kind})
        overall, reply = NAN, None
        if judge:
            messages = ch.judge_messages(state.metadata, draft)
            config = GenerateConfig(temperature=0.0, top_p=1.0, max_tokens=judge_max_tokens,
                                    response_schema=_schema(variant["judge_schema"][kind], structured))
            output = await get_model(judge).generate(_messages({"messages": messages}), config=config)
            reply = output.completion
            if output.stop_reason != "max_tokens" and reply.strip():
                found = rules.judge_score(reply, variant["judge_overall_names"])
                overall = NAN if found is None else found
        return Score(value={"rougeL_char_f1": rules.rouge_l_chars(target.text, draft), "judge_overall": overall,
                            "failed": 0.0}, answer=draft, explanation=reply, metadata={"task": kind})
    return score


@task
def caseforge_release(after: str | None = None, structured: bool = False, split: str | None = None,
                      system: str | None = None, task: str | None = None, judge: str | None = None,
                      judge_max_tokens: int | None = None) -> Task:
    release = ch.open_release(HERE)
    given = {name for name, value in (("split", split), ("system", system), ("task", task), ("judge", judge),
                                      ("judge_max_tokens", judge_max_tokens)) if value is not None}
    foreign = sorted(given - OWN_OPTIONS[release.dataset])
    if foreign:
        raise ch.ReleaseRefused(f"{release.dataset} takes no option {', '.join(foreign)}")
    if release.dataset == "casefacts":
        variant_name, only = "closed-book", None
    elif release.dataset == "aquaechr":
        variant_name, only = system or "rtg-vanilla", None
    else:
        variant_name, only = "generate", ({"task": task} if task else None)
    variant = release.variant(variant_name)
    samples = ch.load_samples(release, variant_name, split, after, only)
    if release.dataset == "casefacts":
        chosen = casefacts_verdict(variant["schema"])
    elif release.dataset == "aquaechr":
        chosen = aquaechr_answer(variant["schema"], variant_name != "closed-book")
    else:
        chosen = casegen_draft(variant, judge, judge_max_tokens or variant["judge_max_tokens"], structured)
    config = GenerateConfig(temperature=0.0, top_p=1.0, max_tokens=variant["max_tokens"],
                            response_schema=_schema(variant["schema"], structured))
    return Task(dataset=_dataset(release, samples), solver=generate(), scorer=chosen, config=config,
                name=f"caseforge_{release.dataset}",
                metadata={"release": release.pin["version"], "variant": variant_name, "after": ch.check_day(after)})
