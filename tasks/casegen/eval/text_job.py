"""Free-text LLM jobs: drafting a judgment section, or a judge's reasoned reply, is prose, not JSON.

A thin view over `run_job` with the `FreeText` output model (no schema sent, any non-empty reply
ok), keyed the way the CaseGen steps read their results.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from caseforge.llm import FreeText, LLMRequest, run_job
from caseforge.llm.jobs import CUT_OFF


@dataclass
class TextResult:
    texts: dict[str, str] = field(default_factory=dict)          # request key -> text
    failures: dict[str, str] = field(default_factory=dict)       # request key -> reason
    identities: dict[str, str] = field(default_factory=dict)     # request key -> request identity
    cut_texts: dict[str, str] = field(default_factory=dict)      # failed only by reaching max_tokens: its text
    cache_hits: int = 0
    backend_calls: int = 0

    def counts(self, prefix: str) -> dict[str, int]:
        return {f"{prefix}_ok": len(self.texts), f"{prefix}_failed": len(self.failures),
                f"{prefix}_cache_hits": self.cache_hits, f"{prefix}_llm_calls": self.backend_calls}


def run_text_job(con: duckdb.DuckDBPyConnection, step: str, backend, requests: list[LLMRequest],
                 retry_failed: bool = False) -> TextResult:
    job = run_job(con, step, backend, requests, FreeText, retry_failed=retry_failed)
    result = TextResult(cache_hits=job.cache_hits, backend_calls=job.backend_calls)
    result.identities = {r.key: r.identity(backend.model) for r in requests}
    result.texts = {key: output.text for key, output in job.outputs.items()}
    result.failures = {key: failure.reason for key, failure in job.failures.items()}
    result.cut_texts = {key: failure.raw for key, failure in job.failures.items()
                        if failure.reason.startswith(CUT_OFF) and (failure.raw or "").strip()}
    return result
