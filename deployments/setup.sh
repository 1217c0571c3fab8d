#!/usr/bin/env bash
# One-time setup of a Prefect server for caseforge: work pools, global concurrency limits and failure
# notifications. Idempotent: existing pools and limits are left as they are, the notification block and
# automation are replaced.  PREFECT_API_URL must point at the server.
#
# Pools: caseforge-cpu (process) runs the nightly, the builders and the evaluations; caseforge-gpu runs the
# shards of their LLM steps (deployment llm-shard/gpu). GPU_POOL_TYPE chooses its type: docker (default) or
# kubernetes need the worker packages (`pip install -e .[workers]`, pinned in requirements-workers.lock);
# kubernetes pools get deployments/gpu/k8s-job-template.yaml as their base job template (with
# CASEFORGE_FANOUT_STORE, when set here, as the default of its `store` variable: the pods' shard store); process suits
# GPU machines that run `prefect worker start --pool caseforge-gpu` themselves.
#
# Global concurrency limits, one per upstream host (upstream-<host name>), bound how many runs (on any
# worker) talk to that host at once: caseforge.fetch takes one slot of its host's limit at a fetcher's first
# request to the host and gives it back when the fetcher closes (flows/wiring.py, PrefectHostSlots), whenever
# it runs inside a Prefect run against this server. A host without a limit is fetched without one (Prefect
# logs a warning). The per-process rate limit of caseforge.fetch still spaces the requests.
#
# Failure notifications (runtime/notifications.py): with CASEFORGE_NOTIFY_URL set (a Slack or Teams webhook, any
# other webhook URL, or sendgrid://API_KEY:from_name@from_domain/to@domain for e-mail) or CASEFORGE_NOTIFY_BLOCK
# (a notification block made in the UI, as <block type slug>/<name>), an automation sends one message when a run
# of a deployment tagged notify-failures (the nightly) ends Failed, Crashed or TimedOut, naming its failed
# stages and linking the run. With neither set, none is made, and the last line says so.
#
# Zombie shard runs (runtime/zombie_runs.py): an automation marks an LLM shard run Crashed when its flow-run
# heartbeats stop for three heartbeats (CASEFORGE_ZOMBIE_WINDOW_S, default 90).
#
# PYTHON defaults to the project's .venv/bin/python (what `make setup` installs), so neither it nor prefect needs
# to be on PATH; everything is made by that Python in one process (caseforge.runtime.server_setup).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
GPU_POOL_TYPE="${GPU_POOL_TYPE:-docker}"   # docker | kubernetes | process
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON="$(command -v python3 || true)"; fi
fi
if [ -z "$PYTHON" ] || ! "$PYTHON" -c 'import importlib.util as u, sys; sys.exit(not (u.find_spec("prefect") and u.find_spec("caseforge")))' 2>/dev/null; then
  echo "setup.sh: no Python with prefect and caseforge at ${PYTHON:-python3}: run 'make setup' in $ROOT (it makes .venv), or set PYTHON=/path/to/venv/bin/python" >&2
  exit 2
fi

# What to make, collected here and made by one Python process (caseforge.runtime.server_setup): each `prefect`
# command would import Prefect again.
pools=()
limits=()
pool() {  # name type [base job template: JSON or YAML]
  pools+=("--pool=$1=$2${3:+:$3}")
}
limit() {  # name limit
  limits+=("--limit=$1=$2")
}

pool caseforge-cpu process
if [ "$GPU_POOL_TYPE" = kubernetes ]; then gpu_template="$HERE/gpu/k8s-job-template.yaml"; else gpu_template=""; fi
pool caseforge-gpu "$GPU_POOL_TYPE" "$gpu_template"

# upstream host -> at most this many flow runs fetching from it at once
limit upstream-api.oyez.org 1
limit upstream-hudoc.echr.coe.int 1
limit upstream-ks.echr.coe.int 1          # the case-law guides (tasks/guides/ingest.py)
limit upstream-wenshu.court.gov.cn 1

# the pools, the limits, then the automation that marks shard runs Crashed when their worker died (Prefect's
# flow-run heartbeats) and who hears of a failed or crashed run
"$PYTHON" -m caseforge.runtime.server_setup "${pools[@]}" "${limits[@]}"
