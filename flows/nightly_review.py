"""The nightly's review stage ([review] nightly lists the benchmarks): for each, pull the annotations people made
since the last night, then push the new build's items that the sample still lacks, before the releases are
written (so their judge cards read tonight's annotations). A Label Studio that does not answer fails this stage
alone, in one line; the releases go on with the annotations pulled before."""
from __future__ import annotations

import logging

from caseforge.review.commands import client_of, pull_report, push_report
from caseforge.review.labelstudio import ReviewUnreachable
from caseforge.review.loop import NothingToReview
from caseforge.settings import Settings
from caseforge.stage_report import StageReport
from caseforge.stopping import RunStopped, stop_of

log = logging.getLogger(__name__)


def review_stage(settings: Settings, con, benchmark: str, client=None) -> StageReport:
    """Pull then push one benchmark, as the nightly's other stages report (a StageReport, the nightly's stage
    `review`): failed with one line when Label Studio does not answer or the work fails."""
    report = StageReport(f"review {benchmark}")
    notes = []
    try:
        with client or client_of(settings) as client:
            try:
                notes.append(pull_report(settings, con, benchmark, report, client))
            except NothingToReview as exc:          # nothing pushed yet: tonight's push starts the review
                notes.append(str(exc))
            notes.append(push_report(settings, con, benchmark, report, client))
    except (ReviewUnreachable, NothingToReview) as exc:
        report.fail(str(exc))
    except Exception as exc:
        if (request := stop_of(exc)) is not None:
            raise RunStopped(request) from exc
        log.exception("review %s failed", benchmark)
        report.fail(f"{type(exc).__name__}: {exc}")
    report.results["summary"] = "; ".join(notes)
    return report

def review_depends(con, release: str, settings: Settings) -> dict | None:
    """What a release's judge card depends on besides its tables (its review's items and annotations, the
    [review] settings), so that the nightly writes the release again when they change; None for a release
    without a judge card."""
    from caseforge.review.card import JUDGE_STEPS
    from caseforge.warehouse.statements import run_sql, table_exists

    if release not in JUDGE_STEPS:
        return None
    state = (run_sql(con, "review/state.sql", {"benchmark": release}).fetchone()
             if table_exists(con, "review.items") else (0, ""))
    review = settings.file.review
    return {"review": {"items": state[0], "annotations": state[1],
                       "settings": review.model_dump(exclude={"token", "url", "timeout_s", "page_size", "nightly"})}}
