"""What one stage of the nightly did (a source, its source health, a builder, an evaluation, a review, a release,
the mirror's publish): the outcome every stage returns to caseforge.flows.nightly_runner, its one line and its row
in the summary."""
from __future__ import annotations

from dataclasses import dataclass, field

from caseforge.flows.nightly_report import RECORD_PROBLEM
from caseforge.stage_report import KNOWN, one_line


@dataclass
class StageOutcome:
    stage: str                  # source | source health | builder | evaluation | review | export | publish (the mirror)
    name: str
    status: str                 # succeeded | failed | quarantined | skipped | interrupted | cancelled | warned
    counts: dict[str, int] = field(default_factory=dict)
    duration_s: float = 0.0
    failures: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def failed(self) -> bool:
        return self.status in ("failed", "quarantined")

    def line(self) -> str:
        """The stage in one line, the same on the terminal, in Prefect (its task run's state message) and in a
        failure notification: its reason, or how many problems it had and the first and last reasons that name no
        record (the last of a source's is often the host it gave up on);
        records it quarantined are only counted (the night's problems table lists each, with its value, once)."""
        head = f"{self.stage} {self.name} {self.status}"
        if not self.failed or not self.failures:
            return f"{head}: {self.note}" if self.note else head
        reasons = [f for f in self.failures if not RECORD_PROBLEM.fullmatch(f)]    # not a quarantined record
        if len(self.failures) == 1 and reasons:
            return f"{head}: {one_line(reasons[0])}"
        count = f"{len(self.failures)} problem{'s' if len(self.failures) != 1 else ''}"
        if not reasons:
            return f"{head}: {count} (in the night's problems)"
        last = f"; last: {one_line(reasons[-1])}" if len(reasons) > 1 else ""
        return f"{head}: {count} (first: {one_line(reasons[0])}{last})"

    def summary_row(self) -> dict:
        c = self.counts
        return {
            "stage": self.stage, "name": self.name, "status": self.status,
            "fetched": c.get("fetched", 0), "new_payloads": c.get("new_payloads", 0),
            "new": c.get("new", 0), "changed": c.get("changed", 0), "quarantined": c.get("quarantined", 0),
            "known_problems": c.get(KNOWN, 0),
            "llm_calls": c.get("llm_calls", 0), "cache_hits": c.get("cache_hits", 0),
            **llm_cost_columns(c),
            "duration_s": round(self.duration_s, 2),
            "problems": len(self.failures or ([self.status] if self.failed else [])),
            "note": self.note,              # the problems themselves: each once, in the summary's own list
        }


def llm_cost_columns(counts: dict) -> dict:
    """What a stage's LLM calls cost tonight (its run's counts, caseforge.session.add_llm_cost), and per item it
    kept (its `new` and `changed` records)."""
    tokens = counts.get("llm_prompt_tokens", 0) + counts.get("llm_completion_tokens", 0)
    kept = counts.get("new", 0) + counts.get("changed", 0)
    return {"prompt_tokens": counts.get("llm_prompt_tokens", 0),
            "completion_tokens": counts.get("llm_completion_tokens", 0),
            "model_s": round(counts.get("llm_model_ms", 0) / 1000, 1),
            "tokens_per_kept": round(tokens / kept) if tokens and kept else None}
