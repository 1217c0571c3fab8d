"""Prefect flow: refresh U.S. Supreme Court cases from Oyez (live or replayed) into curated.scotus_cases."""
from __future__ import annotations

from caseforge.orchestration import quiet_prefect_defaults

quiet_prefect_defaults()

from prefect import flow, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402

from caseforge.config import settings as load_settings  # noqa: E402
from caseforge.orchestration import final_state, publish_counts  # noqa: E402
from caseforge.tasks.oyez import ingest  # noqa: E402

PREFECT_STEPS = ingest.Steps(
    legacy=task(name="oyez-legacy-table", cache_policy=NO_CACHE)(ingest.legacy_step),
    plan=task(name="oyez-case-list", cache_policy=NO_CACHE)(ingest.plan_step),
    live_batch=task(name="oyez-detail-batch", cache_policy=NO_CACHE)(ingest.live_batch_step),
    replay_batch=task(name="oyez-replay-batch", cache_policy=NO_CACHE)(ingest.replay_batch_step),
)


@flow(name="oyez-refresh", log_prints=True)
def oyez_refresh(db: str | None = None, from_dir: str | None = None, term: str | None = None,
                 full: bool = False, legacy_table: str | None = None):
    """Fetch (or replay) Oyez case details, parse, gate and upsert curated.scotus_cases.

    Live: only cases new or changed in the case list are fetched (all with `full`), so a
    nightly run with nothing new upstream downloads the list alone. Replay: every case JSON
    under `from_dir` goes through the same archive → parse → gate → curate path.
    """
    report = ingest.refresh(load_settings(db), from_dir=from_dir, term=term, full=full,
                            legacy_table=legacy_table, steps=PREFECT_STEPS)
    publish_counts(report, "oyez-refresh", "Oyez refresh")
    return final_state(report)
