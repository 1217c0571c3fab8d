"""The temporal rule for overrulings: the overruling case must be newer and must have reversed."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import date

REVERSAL_DISPOSITIONS = ("reversed", "reversed/remanded", "reversed in-part", "reversed in-part/remanded")


def is_reversal(disposition: str | None) -> bool:
    if not disposition:
        return False
    text = disposition.strip().lower()
    return text.startswith("reversed")


@dataclass(frozen=True)
class OverrulingVerdict:
    accepted: bool
    reason: str


def check_overruling(overruled_decided: date | None, overruling_decided: date | None,
                     overruling_disposition: str | None) -> OverrulingVerdict:
    """Accept only a newer overruling case (by decision date, not term) whose disposition is a reversal."""
    if overruled_decided is None or overruling_decided is None:
        return OverrulingVerdict(False, "decision date missing for "
                                 + ("the overruled case" if overruled_decided is None else "the overruling case"))
    if overruling_decided <= overruled_decided:
        return OverrulingVerdict(False, f"overruling case decided {overruling_decided} is not after "
                                        f"the overruled case decided {overruled_decided}")
    if not is_reversal(overruling_disposition):
        return OverrulingVerdict(False, f"overruling case disposition {overruling_disposition!r} is not a reversal")
    return OverrulingVerdict(True, "newer case with a reversal disposition")
