"""What one stage of the nightly did (a source, its source health, a builder, an evaluation, a release, the
mirror's publish): the outcome every stage returns to caseforge.flows.nightly_runner, and its row in the summary."""
from __future__ import annotations

from dataclasses import dataclass, field

from caseforge.stage_report import KNOWN


@dataclass
class StageOutcome:
    stage: str                  # source | source health | builder | evaluation | export | publish (the mirror, after)
    name: str
    status: str                 # succeeded | failed | quarantined | skipped | interrupted | cancelled | warned
    counts: dict[str, int] = field(default_factory=dict)
    duration_s: float = 0.0
    failures: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def failed(self) -> bool:
        return self.status in ("failed", "quarantined")

    def summary_row(self) -> dict:
        c = self.counts
        return {
            "stage": self.stage, "name": self.name, "status": self.status,
            "fetched": c.get("fetched", 0), "new_payloads": c.get("new_payloads", 0),
            "new": c.get("new", 0), "changed": c.get("changed", 0), "quarantined": c.get("quarantined", 0),
            "known_problems": c.get(KNOWN, 0),
            "llm_calls": c.get("llm_calls", 0), "cache_hits": c.get("cache_hits", 0),
            "duration_s": round(self.duration_s, 2),
            "problems": len(self.failures or ([self.status] if self.failed else [])),
            "note": self.note,              # the problems themselves: each once, in the summary's own list
        }
