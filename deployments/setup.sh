#!/usr/bin/env bash
# One-time setup of a Prefect server for caseforge: work pools and global concurrency limits.
# Idempotent: existing pools and limits are left as they are.  PREFECT_API_URL must point at the server.
#
# Global concurrency limits, one per upstream host, bound how many flow runs (on any worker) talk to
# that host at once; the per-process rate limit of caseforge.fetch still spaces the requests.
# A flow that fetches holds a slot with:
#     from prefect.concurrency.sync import concurrency
#     with concurrency("upstream-api.oyez.org", occupy=1): ...
set -euo pipefail

PREFECT="${PREFECT:-prefect}"
GPU_POOL_TYPE="${GPU_POOL_TYPE:-docker}"   # docker | kubernetes (needs prefect-docker / prefect-kubernetes)

pool() {  # name type
  if $PREFECT work-pool inspect "$1" >/dev/null 2>&1; then
    echo "work pool $1 exists"
  else
    $PREFECT work-pool create "$1" --type "$2"
  fi
}

limit() {  # name limit
  if $PREFECT global-concurrency-limit inspect "$1" >/dev/null 2>&1; then
    echo "concurrency limit $1 exists"
  else
    $PREFECT global-concurrency-limit create "$1" --limit "$2"
  fi
}

pool caseforge-cpu process
pool caseforge-gpu "$GPU_POOL_TYPE" || echo "warning: could not create the $GPU_POOL_TYPE pool caseforge-gpu (install its Prefect integration)" >&2

# upstream host -> at most this many flow runs fetching from it at once
limit upstream-api.oyez.org 1
limit upstream-hudoc.echr.coe.int 1
limit upstream-www.echr.coe.int 1
limit upstream-wenshu.court.gov.cn 1
