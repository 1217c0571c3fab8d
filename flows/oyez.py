"""Prefect flow: refresh U.S. Supreme Court cases from Oyez (live or replayed) into curated.scotus_cases."""
from __future__ import annotations

from prefect import flow

from caseforge.artifacts import publish_report
from caseforge.flows.states import as_tasks, ends_as_stopped, final_state
from caseforge.flows.wiring import install
from caseforge.settings import load_settings
from caseforge.tasks.oyez import ingest

# A worker's flow-run process enters caseforge here (deployments/prefect.yaml): Prefect is wired in now, before
# its engine starts the flow run.
install()

PREFECT_STEPS = as_tasks(ingest.Steps(), "oyez")


@flow(name="oyez-refresh", log_prints=True)
@ends_as_stopped
def oyez_refresh(db: str | None = None, from_dir: str | None = None, term: str | None = None,
                 full: bool = False, legacy_table: str | None = None, reparse: bool = False):
    """Fetch (or replay) Oyez case details, parse, gate and upsert curated.scotus_cases.

    Live: only cases new or changed in the case list are fetched (all with `full`), so a
    nightly run with nothing new upstream downloads the list alone. Replay: every case JSON
    under `from_dir` goes through the same archive → parse → gate → curate path. A case this parser
    version loaded before is not parsed again unless `reparse`.
    """
    report = ingest.refresh(load_settings(db), from_dir=from_dir, term=term, full=full,
                            legacy_table=legacy_table, steps=PREFECT_STEPS, reparse=reparse)
    publish_report(report, "oyez-refresh", "Oyez refresh")
    return final_state(report)
