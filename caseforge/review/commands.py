"""`review push|pull BENCHMARK` as runs on the warehouse, each a StageReport (the CLI's and the nightly's):
the Label Studio client made from the settings, the counts, one line per refusal."""
from __future__ import annotations

from caseforge.review.labelstudio import LabelStudio
from caseforge.review.loop import pull, push
from caseforge.review.views import view_of
from caseforge.settings import Settings
from caseforge.stage_report import StageReport

MAX_REFUSALS_LISTED = 50


def client_of(settings: Settings, before_page=None) -> LabelStudio:
    """The Label Studio client of the settings: [review] url, the token of CASEFORGE_REVIEW_TOKEN, else of
    [review] token."""
    review = settings.file.review
    token = settings.review_token.get_secret_value() or review.token.get_secret_value()
    return LabelStudio(review.url, token, review.timeout_s, review.page_size, before_page)


def push_report(settings: Settings, con, benchmark: str, report: StageReport, client: LabelStudio | None = None) -> str:
    view_of(benchmark)
    review = settings.file.review
    with client or client_of(settings) as client:
        result = push(con, client, benchmark, review.sample_size, review.seed, review.annotators_per_item)
    report.add("items_in_review", result.sampled)
    report.add("pushed", result.imported)
    report.add("already_pushed", result.found)
    return result.line(benchmark)


def pull_report(settings: Settings, con, benchmark: str, report: StageReport, client: LabelStudio | None = None) -> str:
    view_of(benchmark)
    with client or client_of(settings) as client:
        result = pull(con, client, benchmark, settings.file.review.annotators_per_item)
    for name in ("accepted", "added", "replaced", "removed", "skipped"):
        report.add(f"annotations_{name}", getattr(result, name))
    if result.refusals:
        report.add("quarantined", len(result.refusals))
        for refusal in result.refusals[:MAX_REFUSALS_LISTED]:
            report.fail(f"{benchmark}: annotation {refusal['annotation_id']} of task {refusal['task_id']} refused: "
                        f"{refusal['reason']}")
        if len(result.refusals) > MAX_REFUSALS_LISTED:
            report.fail(f"{benchmark}: {len(result.refusals) - MAX_REFUSALS_LISTED} more refusals in review.refusals")
    return result.line(benchmark)

