"""`python -m caseforge.runtime.warm_worker --pool caseforge-gpu`: the warm worker (see the package's docstring)."""
from __future__ import annotations

import argparse
import sys

from caseforge.runtime import warm_worker
from caseforge.runtime.warm_worker.serve import ENGINES, PRELOAD


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m caseforge.runtime.warm_worker",
                                     description=warm_worker.__doc__.split("\n\n")[0])
    parser.add_argument("--pool", "-p", required=True, help="the work pool (a process pool: caseforge-gpu)")
    parser.add_argument("--name", "-n", help="the worker's name (default: Prefect's)")
    parser.add_argument("--work-queue", "-q", action="append", default=[], help="poll only these queues")
    parser.add_argument("--preload", action="append", default=[], choices=sorted(ENGINES),
                        help="an engine the warm process imports before its first run (llama_cpp and s3fs always)")
    args = parser.parse_args(argv)
    from caseforge.runtime.warm_worker.worker import run_worker    # Prefect's worker: after the arguments are read

    run_worker(args.pool, args.name, args.work_queue, (*PRELOAD, *args.preload))
    return 0


if __name__ == "__main__":
    sys.exit(main())
