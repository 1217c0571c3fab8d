"""`caseforge server start|stop|status`: the local Prefect server that commands share
(caseforge.runtime.local_server). Commands start it themselves when it is not up; `start` only takes that
first start (migrations, several seconds) off the next command's way."""
from __future__ import annotations

import argparse
import json

from caseforge.cli.common import CommandError, CommandFailed


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("server", help="the local Prefect server that commands share (start, stop, status)")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    start = actions.add_parser("start", help="start it in the background now (commands start it when needed)")
    start.add_argument("--idle-timeout", dest="idle_timeout", type=float,
                       help="seconds without any command using it before it stops itself "
                            "(default: $CASEFORGE_PREFECT_SERVER_IDLE_S or 900)")
    start.set_defaults(handler=run_start)
    stop = actions.add_parser("stop", help="stop it")
    stop.add_argument("--force", action="store_true", help="stop it even while a command is using it")
    stop.set_defaults(handler=run_stop)
    status = actions.add_parser("status", help="whether it runs, where, since when (exit 1 when it does not)")
    status.add_argument("--format", choices=["table", "json"], default="table")
    status.set_defaults(handler=run_status)


def _home() -> str:
    from prefect.settings import PREFECT_HOME

    return str(PREFECT_HOME.value())


def _user_server() -> str | None:
    from prefect.settings import PREFECT_API_URL

    return PREFECT_API_URL.value() or None


def run_start(args: argparse.Namespace) -> int:
    from caseforge.runtime import local_server
    from caseforge.runtime.prefect_api import start_local_server

    if args.idle_timeout is not None and args.idle_timeout <= 0:
        raise CommandError([f"--idle-timeout {args.idle_timeout:g}: expected seconds above 0"])
    user = _user_server()
    if user:
        print(f"PREFECT_API_URL is set ({user}): commands use that server; no local server started")
        return 0
    try:
        state, done = start_local_server(args.idle_timeout)
    except local_server.LocalServerError as exc:
        raise CommandFailed([str(exc)]) from exc
    what = {"reused": "already running"}.get(done, done)
    print(f"local Prefect server {what}: {state['api_url']} (pid {state['pid']}, stops after "
          f"{state['idle_timeout_s']:g} s unused; `caseforge server stop` stops it now)")
    try:
        if local_server.mode() == "ephemeral":
            print(f"note: {local_server.MODE_ENV}=ephemeral here, so commands in this environment do not use it")
    except local_server.LocalServerError:
        pass
    return 0


def run_stop(args: argparse.Namespace) -> int:
    from caseforge.runtime import local_server

    try:
        done = local_server.stop(_home(), force=args.force)
    except local_server.LocalServerError as exc:
        raise CommandFailed([str(exc)]) from exc
    print({"stopped": "local Prefect server stopped",
           "none": "no local Prefect server running",
           "stale": "no local Prefect server running (removed the state of one that was gone)"}[done])
    return 0


def run_status(args: argparse.Namespace) -> int:
    from caseforge.runtime import local_server

    state = local_server.status(_home())
    user = _user_server()
    if args.format == "json":
        print(json.dumps({"running": state is not None, "server": state, "prefect_api_url": user}, indent=1))
    elif state is None:
        print(f"no local Prefect server running (state: {local_server.Paths.of(_home()).home})")
    else:
        print(f"running: {state['api_url']} (pid {state['pid']}, Prefect {state['prefect_version']}, caseforge "
              f"{state.get('caseforge_version', '?')}, virtual environment {state.get('venv', '?')}, "
              f"since {state['started_at']}, {'in use' if state['in_use'] else 'idle'}, stops after "
              f"{state['idle_timeout_s']:g} s unused; state and log in {state['state_dir']})")
    if user and args.format != "json":
        print(f"note: PREFECT_API_URL is set ({user}): commands use that server, not this one")
    return 0 if state is not None else 1
