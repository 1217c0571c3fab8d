"""The fresh split's cutoff: chosen from the data, the `[release]` settings and the previous release in the same
folder, never from the clock."""
from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from caseforge.release.layout import METADATA


@dataclass(frozen=True)
class FreshCutoff:
    cutoff: str | None     # ISO date; rows dated strictly after it are fresh (None: no row is)
    rule: str              # setting | same_data | previous_release | newest_months | no_dates
    reason: str

    def describe(self, date_column: str, rows: int) -> str:
        if self.cutoff is None:
            return f"The fresh split is empty: {self.reason}."
        return (f"`fresh` holds the {rows} row{'' if rows == 1 else 's'} whose `{date_column}` is after "
                f"{self.cutoff}: {self.reason}. "
                "It repeats rows of the other splits (same columns), for evaluating on documents newer than a "
                "model's training data; set `[release] fresh_after` in the settings to choose the cutoff.")


def _as_date(value) -> dt.date | None:
    if value is None or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (pd.Timestamp, dt.datetime)):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def choose_cutoff(newest: dt.date | None, data_digest: str, previous: dict | None, fresh_after: str,
                  fresh_months: int) -> FreshCutoff:
    """The fresh cutoff, from the data and settings alone (never the clock):

    1. `[release] fresh_after` when set;
    2. the previous release in the folder holds the same rows: its cutoff again (a rewrite is the same release);
    3. a previous release with a data date: that date (fresh = what is newer than the last release);
    4. no previous release: `fresh_months` months before the newest date in the data.
    """
    if fresh_after:
        cutoff = _as_date(fresh_after)
        return FreshCutoff(cutoff.isoformat(), "setting", f"cutoff {cutoff} set by `[release] fresh_after`")
    if previous and previous.get("data_digest") == data_digest and previous.get("fresh"):
        kept = previous["fresh"]
        return FreshCutoff(kept.get("cutoff"), kept.get("rule", "same_data"), kept.get("reason", ""))
    if previous and previous.get("data_date"):
        return FreshCutoff(previous["data_date"], "previous_release",
                           f"the newest source-document date of the previous release in this folder "
                           f"(version {previous.get('version')})")
    if newest is None:
        return FreshCutoff(None, "no_dates", "no row has a source-document date")
    cutoff = (pd.Timestamp(newest) - pd.DateOffset(months=fresh_months)).date()
    return FreshCutoff(cutoff.isoformat(), "newest_months",
                       f"no previous release in this folder, so the last {fresh_months} months before the newest "
                       f"source-document date ({newest}) are fresh (`[release] fresh_months`)")


def _previous_release(final: Path) -> dict | None:
    path = final / METADATA
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def release_settings() -> dict:
    from caseforge.settings import load_settings

    found = load_settings().file.release
    return {"fresh_after": found.fresh_after, "fresh_months": found.fresh_months}
