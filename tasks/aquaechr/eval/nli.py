"""One NLI interface, two implementations: a local cross-encoder and an LLM judge.

`judge.entails(pairs)` takes (premise, hypothesis) pairs and answers, per pair, True (entailed), False
(not entailed) or None (the judge failed on that pair; the reason is in `judge.failures`). Metrics
leave None pairs out of their denominators and count them, so nothing is dropped silently.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal, Protocol, Sequence

from pydantic import BaseModel

Pair = tuple[str, str]


class NLIJudge(Protocol):
    name: str
    failures: dict[str, str]

    def entails(self, pairs: Sequence[Pair]) -> list[bool | None]: ...


def pair_key(premise: str, hypothesis: str) -> str:
    return hashlib.sha256(f"{premise}\x00{hypothesis}".encode("utf-8")).hexdigest()[:20]


class CrossEncoderNLI:
    """A sentence-transformers CrossEncoder NLI model loaded from a local folder (argmax label = entailment)."""

    def __init__(self, model_path: str | Path, batch_size: int = 16):
        path = Path(model_path)
        if not path.is_dir():
            raise FileNotFoundError(f"NLI cross-encoder folder not found: {path} (give --nli cross-encoder:<local path>)")
        from sentence_transformers import CrossEncoder

        self.model = CrossEncoder(str(path), device="cpu")
        labels = {int(i): str(label).lower() for i, label in self.model.config.id2label.items()}
        entail = [i for i, label in labels.items() if label.startswith("entail")]
        if not entail:
            raise ValueError(f"NLI model {path} has no 'entailment' label (labels: {sorted(labels.values())})")
        self.entail_index = entail[0]
        self.name = f"cross-encoder:{path.name}"
        self.batch_size = batch_size
        self.failures: dict[str, str] = {}

    def entails(self, pairs: Sequence[Pair]) -> list[bool | None]:
        if not pairs:
            return []
        scores = self.model.predict([list(p) for p in pairs], batch_size=self.batch_size, show_progress_bar=False)
        return [bool(int(row.argmax()) == self.entail_index) for row in scores]


class EntailmentVerdict(BaseModel):
    entailment: Literal["yes", "no"]


NLI_STEP = "aquaechr-eval-nli"


class LLMJudgeNLI:
    """Entailment asked of an LLM through the job runner (prompts/aquaechr/eval/nli.j2); cached like any job."""

    TEMPLATE = "aquaechr/eval/nli.j2"

    def __init__(self, con, backend, step: str = NLI_STEP, max_attempts: int = 3):
        self.con, self.backend, self.step, self.max_attempts = con, backend, step, max_attempts
        self.name = f"llm:{backend.model}"
        self.failures: dict[str, str] = {}

    def entails(self, pairs: Sequence[Pair]) -> list[bool | None]:
        from caseforge.llm import SamplingParams, request_from_template, run_job

        keys, requests, seen = [], [], set()
        for premise, hypothesis in pairs:
            key = pair_key(premise, hypothesis)
            keys.append(key)
            if key not in seen:
                seen.add(key)
                requests.append(request_from_template(key, self.TEMPLATE, SamplingParams(temperature=0.0, max_tokens=30),
                                                      premise=premise, hypothesis=hypothesis))
        result = run_job(self.con, self.step, self.backend, requests, EntailmentVerdict, max_attempts=self.max_attempts)
        for key, failure in result.failures.items():
            self.failures[key] = failure.reason
        return [result.outputs[k].entailment == "yes" if k in result.outputs else None for k in keys]


class MemoNLI:
    """Wraps a judge so each distinct pair is judged once per run."""

    def __init__(self, inner: NLIJudge):
        self.inner = inner
        self.name = inner.name
        self.memo: dict[str, bool | None] = {}

    @property
    def failures(self) -> dict[str, str]:
        return self.inner.failures

    def entails(self, pairs: Sequence[Pair]) -> list[bool | None]:
        todo = []
        for premise, hypothesis in pairs:
            key = pair_key(premise, hypothesis)
            if key not in self.memo and (premise, hypothesis) not in todo:
                todo.append((premise, hypothesis))
        for pair, verdict in zip(todo, self.inner.entails(todo) if todo else []):
            self.memo[pair_key(*pair)] = verdict
        return [self.memo[pair_key(p, h)] for p, h in pairs]


def make_nli(spec: str, con=None, backend=None) -> NLIJudge:
    """`llm` (the LLM judge over `backend`) or `cross-encoder:<local path>`."""
    if spec == "llm":
        if backend is None:
            raise ValueError("--nli llm needs an LLM backend (--llm/--model)")
        return MemoNLI(LLMJudgeNLI(con, backend))
    if spec.startswith("cross-encoder:"):
        return MemoNLI(CrossEncoderNLI(spec.split(":", 1)[1]))
    raise ValueError(f"unknown NLI judge {spec!r} (use 'llm' or 'cross-encoder:<local path>')")
