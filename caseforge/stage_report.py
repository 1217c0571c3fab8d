"""What a stage did, as every stage returns it to the CLI, to Prefect and to ops.runs: counts for the UI and
one-line reasons for everything that went wrong, and the true state that follows from them."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from caseforge.stopping import StopRequest

# Known problems (issue 36): records quarantined before for the same reason, in payloads that have not changed;
# counted, never failures: a night with nothing new is green and still says they are there.
KNOWN = "known_problems"                        # records
KNOWN_PAYLOADS = "known_problem_payloads"       # payloads holding them (those the ledger skipped or recorded)
KNOWN_SINCE = "known_problems_since_run"        # the earliest run that quarantined one of them (not a sum)


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

    def known_problems(self, records: int, payloads: int = 0, since: int | None = None) -> None:
        """Count known problems: `records` quarantined before (since run `since`), in `payloads`."""
        self.add(KNOWN, records)
        if payloads:
            self.add(KNOWN_PAYLOADS, payloads)
        if since is not None:
            self.counts[KNOWN_SINCE] = min(self.counts.get(KNOWN_SINCE, since), since)

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


def known_problems_text(records: int, payloads: int = 0, since: int | None = None) -> str:
    """'known problems: 3 records in 2 payloads, since run 7' (the summary's, the CLI's and status's line)."""
    text = f"known problems: {records} record{'s' if records != 1 else ''}"
    if payloads:
        text += f" in {payloads} payload{'s' if payloads != 1 else ''}"
    return text + (f", since run {since}" if since is not None else "")


def known_problems_of(counts: dict) -> str | None:
    """The known-problems line of a report's counts, or None when it counted none."""
    if not counts.get(KNOWN):
        return None
    return known_problems_text(counts[KNOWN], counts.get(KNOWN_PAYLOADS, 0), counts.get(KNOWN_SINCE))


# --- a reason as people read it ---

CELL_WIDTH = 80                 # a table cell longer than this is cut (the terminal's tables, the problems artifact)
REASON_SHOWN = 300              # characters of a reason in a stage's one line


def one_line(reason: str, limit: int = REASON_SHOWN) -> str:
    """A reason on one line (spaces and line breaks folded), cut to `limit` characters."""
    text = " ".join(str(reason).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def table_cell(text: str, width: int = CELL_WIDTH) -> str:
    """Text as a table cell shows it: cut to `width` characters, the cut marked with '...'."""
    return text if len(text) <= width else text[:width - 3] + "..."

