"""Requests, completions and the request identity that keys the cache."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from pydantic import BaseModel, Field


class SamplingParams(BaseModel):
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 512
    seed: int | None = None


class FreeText(BaseModel):
    """Output model for steps that want prose, not JSON: no schema is sent; any non-empty reply is ok."""

    text: str


class LLMRequest(BaseModel):
    """One prompt of a job. `key` is the caller's id for it (unique within the job); not part of identity."""

    key: str
    messages: list[dict[str, str]]
    params: SamplingParams = Field(default_factory=SamplingParams)
    template_id: str
    template_sha: str
    json_schema: dict | None = None

    def canonical(self, model: str) -> dict:
        """Everything that makes up the request's identity (the `key` does not)."""
        return {
            "model": model,
            "messages": self.messages,
            "params": self.params.model_dump(),
            "schema": self.json_schema,
            "template": [self.template_id, self.template_sha],
        }

    def identity(self, model: str) -> str:
        return identity_of(self.canonical(model))


def identity_of(canonical: dict) -> str:
    """sha256 of a request's canonical form (LLMRequest.canonical), as stored in replay files."""
    text = json.dumps(canonical, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Completion:
    """What a backend returned for one request: text, or an error that says why not.

    `finish_reason` "length" means the answer was cut off at max_tokens. `retryable` False means
    another attempt cannot do better (the prompt does not fit the context window, the server refused
    the request as malformed). `answered` False means no answer came at all (the endpoint was down, cut
    the connection or missed its deadline, the engine failed): the error says nothing about the request,
    so it is not cached as the request's answer and the next run asks again. `served_model` is the model that
    answered, as the backend knows it (the endpoint's `model` field, the model file loaded): ops.llm_calls keeps
    it beside the answer."""

    text: str | None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    error: str | None = None
    finish_reason: str | None = None
    retryable: bool = True
    answered: bool = True
    served_model: str | None = None


@dataclass
class Failure:
    key: str
    identity: str
    reason: str
    raw: str | None = None
    answered: bool = True        # False: no answer came (ops.llm_calls status 'unanswered'); asked again next run


@dataclass
class JobResult:
    outputs: dict[str, BaseModel] = field(default_factory=dict)   # request key -> parsed output
    failures: dict[str, Failure] = field(default_factory=dict)
    cache_hits: int = 0
    backend_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    fanout: object | None = None      # caseforge.llm.fanout.FanoutReport when shard workers answered

    def counts(self) -> dict[str, int]:
        return {
            "llm_ok": len(self.outputs),
            "llm_failed": len(self.failures),
            "llm_cache_hits": self.cache_hits,
            "llm_calls": self.backend_calls,
            "llm_prompt_tokens": self.prompt_tokens,
            "llm_completion_tokens": self.completion_tokens,
        }
