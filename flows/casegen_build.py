"""Prefect flow: gold judgment sections → CaseGen task items in curated.casegen_items."""
from __future__ import annotations

from caseforge.orchestration import quiet_prefect_defaults

quiet_prefect_defaults()

from prefect import flow, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402

from caseforge.config import settings as load_settings  # noqa: E402
from caseforge.orchestration import final_state, publish_counts  # noqa: E402
from caseforge.tasks.casegen import pipeline  # noqa: E402

PREFECT_STEPS = pipeline.BuildSteps(
    read_sources=task(name="casegen-read-sources", cache_policy=NO_CACHE)(pipeline.read_sources_step),
    build_items=task(name="casegen-build-items", cache_policy=NO_CACHE)(pipeline.build_items_step),
)


@flow(name="casegen-build", log_prints=True)
def casegen_build(db: str | None = None, from_file: str | None = None, limit: int | None = None):
    """Build the four drafting tasks (defense, facts, reasoning, judgment) from gold sections.

    Source: curated.cn_judgments (the representatives, when curated.cn_representatives exists), or
    CaseGen-format JSONL records given with `from_file`. A task whose gold sections are absent is
    recorded in curated.casegen_item_skips with the reason.
    """
    report = pipeline.run_build(load_settings(db), from_file=from_file, limit=limit, steps=PREFECT_STEPS)
    publish_counts(report, "casegen-build", "CaseGen items")
    return final_state(report)
