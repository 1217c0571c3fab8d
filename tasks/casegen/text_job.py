"""Free-text LLM jobs on the shared call cache.

`run_job` parses every answer as JSON; drafting a judgment section (and a judge's reasoned reply) is
plain text, so this runs the same cache → backend → ops.llm_calls path and keeps the text as it is.
A reply counts as ok when it is non-empty; what the text means is the caller's business.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone

import duckdb

from caseforge.llm.jobs import _cached, _write
from caseforge.llm.types import LLMRequest
from caseforge.progress import Progress


@dataclass
class TextResult:
    texts: dict[str, str] = field(default_factory=dict)          # request key -> text
    failures: dict[str, str] = field(default_factory=dict)       # request key -> reason
    identities: dict[str, str] = field(default_factory=dict)     # request key -> request identity
    cache_hits: int = 0
    backend_calls: int = 0

    def counts(self, prefix: str) -> dict[str, int]:
        return {f"{prefix}_ok": len(self.texts), f"{prefix}_failed": len(self.failures),
                f"{prefix}_cache_hits": self.cache_hits, f"{prefix}_llm_calls": self.backend_calls}


def run_text_job(con: duckdb.DuckDBPyConnection, step: str, backend, requests: list[LLMRequest],
                 retry_failed: bool = False) -> TextResult:
    keys = [r.key for r in requests]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{step}: request keys must be unique within a job")
    result = TextResult()
    by_identity: dict[str, list[LLMRequest]] = {}
    for request in requests:
        identity = request.identity(backend.model)
        result.identities[request.key] = identity
        by_identity.setdefault(identity, []).append(request)
    cached = _cached(con, list(by_identity))
    pending = []
    for identity, group in by_identity.items():
        hit = cached.get(identity)
        if hit is not None and (hit[0] == "ok" or not retry_failed):
            status, _parsed, raw, error = hit
            for request in group:
                result.cache_hits += 1
                if status == "ok":
                    result.texts[request.key] = raw
                else:
                    result.failures[request.key] = error or "failed earlier"
            continue
        pending.append((identity, group[0]))
    progress = Progress(f"llm {step}", total=len(pending))
    size = max(1, int(getattr(backend, "batch_size", 16)))
    for start in range(0, len(pending), size):
        chunk = pending[start:start + size]
        completions = backend.complete_batch([request for _, request in chunk])
        if len(completions) != len(chunk):
            raise RuntimeError(f"{backend.name} returned {len(completions)} completions for {len(chunk)} requests")
        result.backend_calls += len(chunk)
        now = datetime.now(timezone.utc)
        rows = []
        for (identity, request), completion in zip(chunk, completions):
            text = completion.text if completion.error is None else None
            ok = text is not None and bool(text.strip())
            error = None if ok else (completion.error or "empty output")
            rows.append((identity, step, backend.name, backend.model, request.template_id, request.template_sha,
                         request.model_dump_json(), completion.text, json.dumps({"text": text}, ensure_ascii=False)
                         if ok else None, "ok" if ok else "failed", error, 1, completion.prompt_tokens,
                         completion.completion_tokens,
                         None if completion.latency_s is None else completion.latency_s * 1000.0, now))
            for same in by_identity[identity]:
                if ok:
                    result.texts[same.key] = text
                else:
                    result.failures[same.key] = error
        _write(con, rows)
        progress.step(len(chunk))
    if pending:
        progress.close()
    return result
