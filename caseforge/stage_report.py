"""What a stage did, as every stage returns it to the CLI, to Prefect and to ops.runs: counts for the UI and
one-line reasons for everything that went wrong, and the true state that follows from them."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from caseforge.stopping import StopRequest


@dataclass
class StageReport:
    """What a stage did: counts for the UI and one-line reasons for everything that went wrong."""

    name: str
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    run_id: int | None = None
    results: dict = field(default_factory=dict)     # what the stage made: an eval run id, a release folder
    ended: str | None = None            # interrupted | cancelled | failed: the work did not finish

    def add(self, counter: str, n: int = 1) -> None:
        self.counts[counter] = self.counts.get(counter, 0) + n

    def fail(self, reason: str) -> None:
        self.failures.append(reason)

    def stopped(self, request: StopRequest) -> None:
        """The work was stopped before it finished."""
        self.ended = request.state
        self.failures.insert(0, f"{self.name}: {request.reason} before it finished")

    def crashed(self, reason: str) -> None:
        """An exception ended the work."""
        self.ended = "failed"
        self.failures.insert(0, reason)

    @property
    def ok(self) -> bool:
        return self.ended is None and not self.failures and not self.counts.get("quarantined", 0)

    @property
    def status(self) -> str:
        if self.ended:
            return self.ended
        if self.failures and not self.counts.get("quarantined"):
            return "failed"
        return "succeeded" if self.ok else "quarantined"

    def to_dict(self) -> dict:
        return asdict(self)
