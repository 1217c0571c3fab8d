"""Prefect flow: the nightly refresh (sources in parallel, changed builders, releases) with a summary."""
from __future__ import annotations

from caseforge.orchestration import quiet_prefect_defaults

quiet_prefect_defaults()

from pathlib import Path  # noqa: E402

from prefect import flow, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402

from caseforge import nightly  # noqa: E402
from caseforge.config import settings as load_settings  # noqa: E402

source_task = task(name="nightly-source", cache_policy=NO_CACHE)(nightly.run_source)


def prefect_sources(settings, planned):
    """Each source as a Prefect task run on the flow's thread pool (one task per source, not per row)."""
    futures = [source_task.with_options(task_run_name=f"source-{name}").submit(settings, name, kwargs)
               for name, kwargs in planned]
    return [f.result() for f in futures]


@flow(name="nightly", log_prints=True)
def nightly_refresh(db: str | None = None, from_samples: bool = False, samples_dir: str | None = None,
                    release_dir: str | None = None, sources: list[str] | None = None,
                    builder_options: dict | None = None, force: bool = False):
    """Every source (in parallel), then each builder and release whose inputs changed; one summary."""
    from caseforge.nightly_report import publish_artifacts, quality_rows
    from prefect.states import Completed, Failed
    from caseforge.warehouse import open_warehouse

    settings = load_settings(db)
    options = nightly.NightlyOptions(from_samples=from_samples, samples_dir=Path(samples_dir) if samples_dir else None,
                                     release_dir=Path(release_dir) if release_dir else None, sources=sources,
                                     builder_options=builder_options or {}, force=force)
    result = nightly.run_nightly(settings, options, map_sources=prefect_sources)
    with open_warehouse(settings.db_path) as con:
        publish_artifacts(result, quality_rows(con))
    print(f"nightly run {result.run_id}: summary in {result.run_dir / 'summary.md'}")
    data = result.to_dict()
    if result.ok:
        return Completed(message=f"nightly {result.run_id}: ok", data=data)
    return Failed(message=f"nightly {result.run_id}: {len(data['failures'])} problem(s): "
                          + "; ".join(data["failures"][:3]), data=data)
