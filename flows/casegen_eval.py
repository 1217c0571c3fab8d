"""Prefect flow: run models on CaseGen items, judge the drafts, score them, publish a leaderboard."""
from __future__ import annotations

from caseforge.orchestration import quiet_prefect_defaults

quiet_prefect_defaults()

from prefect import flow, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402

from caseforge.config import settings as load_settings  # noqa: E402
from caseforge.orchestration import final_state, publish_counts  # noqa: E402
from caseforge.tasks.casegen import pipeline  # noqa: E402

PREFECT_STEPS = pipeline.EvalSteps(
    generate=task(name="casegen-generate", cache_policy=NO_CACHE)(pipeline.generate_step),
    judge=task(name="casegen-judge", cache_policy=NO_CACHE)(pipeline.judge_step),
    score=task(name="casegen-metrics", cache_policy=NO_CACHE)(pipeline.metrics_step),
    report=task(name="casegen-report", cache_policy=NO_CACHE)(pipeline.report_step),
)


@flow(name="casegen-eval", log_prints=True)
def casegen_eval(params: pipeline.EvalParams, db: str | None = None):
    """Generate (temperature 0, input cut from the middle), judge, score and report CaseGen items."""
    from prefect.artifacts import create_markdown_artifact

    report, result = pipeline.run_eval(load_settings(db), params, steps=PREFECT_STEPS)
    if result.get("markdown"):
        create_markdown_artifact(key="casegen-leaderboard", markdown="## CaseGen leaderboard\n\n" + result["markdown"])
    publish_counts(report, "casegen-eval", "CaseGen evaluation")
    return final_state(report)
