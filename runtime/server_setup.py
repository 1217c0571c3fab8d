"""What deployments/setup.sh does to a Prefect server, in one process (each `prefect` command would import Prefect
again: fourteen of them took most of a minute): work pools, global concurrency limits, the automation that marks
zombie shard runs Crashed (caseforge.runtime.zombie_runs) and failure notifications (caseforge.runtime.notifications).
Idempotent: a pool or a limit that exists is left as it is; the automations are created or updated.

    python -m caseforge.runtime.server_setup --pool caseforge-cpu=process \\
        --pool caseforge-gpu=kubernetes:deployments/gpu/k8s-job-template.yaml --limit upstream-api.oyez.org=1
"""
from __future__ import annotations

import argparse
import json
import sys

from caseforge.runtime import notifications, zombie_runs


def make_pool(client, name: str, kind: str, template_path: str | None) -> str:
    """The pool `name` of type `kind` (the type's default base job template, or the one in `template_path`),
    unless a pool of that name exists: what was done, in one line. ValueError for a type this machine cannot make
    (a docker or kubernetes pool without Prefect's worker packages, and no registry to ask)."""
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectNotFound
    from prefect.utilities.asyncutils import run_coro_as_sync
    from prefect.workers.utilities import get_default_base_job_template_for_infrastructure_type

    try:
        client.read_work_pool(name)
        return f"work pool {name} exists"
    except ObjectNotFound:
        pass
    if template_path:
        template = base_job_template(template_path)
    else:
        template = run_coro_as_sync(get_default_base_job_template_for_infrastructure_type(kind))
    if template is None:
        raise ValueError(f"no {kind} work pool type here: pip install -e .[workers] (requirements-workers.lock)")
    client.create_work_pool(WorkPoolCreate(name=name, type=kind, base_job_template=template))
    return f"work pool {name} created ({kind})"


def base_job_template(path: str) -> dict:
    """A base job template from a JSON or YAML file; a template with a `store` variable (the kubernetes one) gets
    the settings' fanout_store (CASEFORGE_FANOUT_STORE of this environment), when set, as its default: the pods'
    shard store."""
    import yaml

    from caseforge.settings import load_settings

    with open(path) as handle:
        template = json.load(handle) if path.endswith(".json") else yaml.safe_load(handle)
    store = load_settings().fanout_store.strip()
    variables = template.get("variables", {}).get("properties", {})
    if store and "store" in variables:
        variables["store"]["default"] = store
    return template


def make_limit(client, name: str, limit: int) -> str:
    from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
    from prefect.exceptions import ObjectNotFound

    try:
        client.read_global_concurrency_limit_by_name(name)
        return f"concurrency limit {name} exists"
    except ObjectNotFound:
        client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=limit))
        return f"concurrency limit {name} created ({limit})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m caseforge.runtime.server_setup",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--pool", action="append", default=[], metavar="NAME=TYPE[:TEMPLATE.json|.yaml]")
    parser.add_argument("--limit", action="append", default=[], metavar="NAME=LIMIT")
    args = parser.parse_args(argv)
    if args.pool or args.limit:
        make_pools_and_limits(args.pool, args.limit)
    # shard runs whose worker died are marked Crashed; then who hears of a failed or crashed run
    return zombie_runs.main([]) or notifications.main([])


def make_pools_and_limits(pools: list[str], limits: list[str]) -> None:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        for spec in pools:
            name, _, kind = spec.partition("=")
            kind, _, template = kind.partition(":")
            try:
                print(make_pool(client, name, kind, template or None), flush=True)
            except ValueError as exc:
                print(f"warning: could not create the {kind} pool {name}: {exc}", file=sys.stderr)
        for spec in limits:
            name, _, limit = spec.partition("=")
            print(make_limit(client, name, int(limit)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
