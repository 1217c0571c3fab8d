"""Prefect flow: Chinese court judgments from bulk dumps into curated.cn_judgments, then filters
(curated.cn_filter_decisions) and, on request, representatives (curated.cn_representatives)."""
from __future__ import annotations

from prefect import flow

from caseforge.artifacts import publish_report
from caseforge.flows.states import as_tasks, ends_as_stopped, final_state
from caseforge.settings import load_settings
from caseforge.tasks.cn import ingest
from caseforge.tasks.cn.select import TFIDF

PREFECT_STEPS = as_tasks(ingest.Steps(), "cn")


@flow(name="cn-judgments", log_prints=True)
@ends_as_stopped
def cn_refresh(db: str | None = None, from_dir: str | None = None, doc_ids: str | None = None,
               filters: str | None = None, select_n: int = 0, clusters: int = 10, embedder: str = TFIDF,
               seed: int = 0, reparse: bool = False):
    """Judgment dumps under `from_dir` (and/or documents listed in `doc_ids`, fetched with the user's own
    session) → sections, gated and upserted; filters; with select_n > 0, K-Means representatives. A dump this
    parser version loaded before is not parsed again unless `reparse`."""
    report = ingest.refresh(load_settings(db), from_dir=from_dir, doc_ids=doc_ids, filters=filters,
                            select_n=select_n, clusters=clusters, embedder=embedder, seed=seed, steps=PREFECT_STEPS,
                            reparse=reparse)
    publish_report(report, "cn-judgments", "Chinese judgments")
    return final_state(report)
