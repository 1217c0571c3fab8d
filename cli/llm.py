"""`caseforge llm models|ping|stats|export-replay`: look at and try the LLM layer."""
from __future__ import annotations

import argparse
import fnmatch
import importlib.util

from caseforge.cli.common import (CommandFailed, add_db_option, add_format_option, notes_out, print_rows,
                                  unknown_value)
from caseforge.llm.backends import REGISTRY
from caseforge.llm.config import ROLES, backend_for, llm_choice
from caseforge.llm.types import LLMRequest, SamplingParams
from caseforge.settings import load_settings, user_file

# what each backend needs installed, for `llm models`
_NEEDS = {"replay": None, "openai": "httpx", "llamacpp": "llama_cpp", "vllm": "vllm"}


def _add_choice_options(parser: argparse.ArgumentParser, role_default: str | None = "generator") -> None:
    parser.add_argument("--llm", dest="backend", choices=sorted(REGISTRY), help="backend (default: configured)")
    parser.add_argument("--model", help="model name (default: configured)")
    parser.add_argument("--step", help="use this step's configured choice, e.g. casefacts.factuality")
    parser.add_argument("--role", choices=ROLES, default=role_default,
                        help=f"the role to use (default {role_default})" if role_default else "only this role's rows")
    parser.add_argument("--replay-file", help="JSONL replay file (replay backend)")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint (openai backend), e.g. http://127.0.0.1:8000/v1")


def register(sub: argparse._SubParsersAction) -> None:
    group = sub.add_parser("llm", help="the LLM layer: configured models, endpoint check, cache statistics")
    commands = group.add_subparsers(dest="llm_command", required=True)

    models = commands.add_parser("models", help="which backend and model each step uses")
    _add_choice_options(models, role_default=None)
    add_format_option(models)
    models.set_defaults(handler=run_models)

    ping = commands.add_parser("ping", help="send one tiny request: is the backend up and answering?")
    _add_choice_options(ping)
    ping.add_argument("--timeout-s", type=float, default=30.0)
    ping.set_defaults(handler=run_ping)

    stats = commands.add_parser("stats", help="calls, ok/failed, tokens and latency per step from the cache")
    stats.add_argument("--step", help="one step only")
    add_format_option(stats)
    add_db_option(stats)
    stats.set_defaults(handler=run_stats)

    export = commands.add_parser("export-replay", help="write cached answers as a replay file (JSONL)")
    export.add_argument("--out", required=True, help="replay file to write")
    export.add_argument("--step", help="one step only")
    add_db_option(export)
    export.set_defaults(handler=run_export_replay)


def known_steps(con=None) -> list[str]:
    """The LLM steps the pipelines name (a pattern such as aquaechr-question-* for a family of steps), and
    those in the cache of `con`."""
    from caseforge.flows import registry
    from caseforge.warehouse.statements import run_sql

    steps = {step for entry in registry.llm_steps().values() for step in entry}
    if con is not None:
        steps |= {row[0] for row in run_sql(con, "llm/cached_steps.sql").fetchall()}
    return sorted(steps)


def check_step(step: str | None, con=None) -> None:
    """A step no pipeline names and the cache does not hold is a typo: exit 2 with the closest name."""
    if step is None:
        return
    known = known_steps(con)
    if not any(fnmatch.fnmatchcase(step, pattern) for pattern in known):
        raise unknown_value("LLM step", step, known)


def _choice(args):
    check_step(args.step)
    return llm_choice(step=args.step, role=args.role, backend=args.backend, model=args.model,
                      replay_file=args.replay_file, base_url=getattr(args, "base_url", None))


def run_models(args: argparse.Namespace) -> int:
    """Each role's choice, then each configured step's, then the pipelines' steps and their roles."""
    from caseforge.flows import registry

    check_step(args.step)
    rows = []
    for role in ROLES:
        try:
            choice = llm_choice(role=role, backend=args.backend, model=args.model, replay_file=args.replay_file)
            rows.append(("(any)", role, choice.backend, choice.model, choice.family, _options(choice)))
        except ValueError as exc:
            rows.append(("(any)", role, args.backend or "-", "-", "-", str(exc)))
    for name, entry in sorted(registry.llm_steps().items()):
        for step, role in sorted(entry.items()):
            try:
                choice = llm_choice(step=step, role=role, backend=args.backend, model=args.model,
                                    replay_file=args.replay_file)
                rows.append((step, role, choice.backend, choice.model, choice.family, _options(choice)))
            except ValueError as exc:
                rows.append((step, role, args.backend or "-", "-", "-", str(exc)))
    rows = [row for row in rows if (args.role is None or row[1] == args.role)
            and (args.step is None or row[0] in ("(any)", args.step) or fnmatch.fnmatchcase(args.step, row[0]))]
    installed = {name: "yes" if needs is None or importlib.util.find_spec(needs) else f"no ({needs} missing)"
                 for name, needs in sorted(_NEEDS.items())}
    rows = [(*row, installed.get(row[2], "-")) for row in rows]
    print_rows(["step", "role", "backend", "model", "family", "options", "installed"], rows, args.format)
    found = user_file()
    print(f"settings: caseforge/defaults.toml{' + ' + str(found) if found else ''}", file=notes_out(args.format))
    if args.format == "table":
        print_rows(["backend", "installed"], sorted(installed.items()), "table")
    return 0


def _options(choice) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(choice.options.items()))


def run_ping(args: argparse.Namespace) -> int:
    choice = _choice(args)
    if choice.backend == "openai":
        choice.options.setdefault("timeout_s", args.timeout_s)
        choice.options.setdefault("max_retries", 1)
    backend = backend_for(choice)
    probe = LLMRequest(key="ping", messages=[{"role": "user", "content": "Reply with the single word: ready"}],
                       params=SamplingParams(max_tokens=8), template_id="ping", template_sha="-")
    try:
        [completion] = backend.complete_batch([probe])
    except Exception as exc:   # the point of ping is to say why it is not answering
        raise CommandFailed([f"{choice.describe()} did not answer: {type(exc).__name__}: {exc}"]) from exc
    if completion.error:
        raise CommandFailed([f"{choice.describe()} did not answer: {completion.error}"])
    latency = f"{completion.latency_s * 1000:.0f} ms" if completion.latency_s is not None else "?"
    print(f"{choice.describe()} answered in {latency}: {(completion.text or '').strip()[:80]!r}")
    return 0


def run_stats(args: argparse.Namespace) -> int:
    from caseforge.warehouse.query import open_for_query
    from caseforge.warehouse.statements import sql_text
    settings = load_settings(args.db)
    con, _ = open_for_query(settings.db_path, settings.parquet_dir)
    try:
        check_step(args.step, con)
        cursor = con.execute(sql_text("llm/stats.sql"), {"step": args.step})
        columns = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
    finally:
        con.close()
    print_rows(columns, rows, args.format)
    return 0


def run_export_replay(args: argparse.Namespace) -> int:
    from caseforge.llm.backends.replay import export_replay, not_a_replay_file
    from caseforge.outputs import check_output_path, check_replaceable_file
    from caseforge.warehouse.connection import connect
    settings = load_settings(args.db)
    # refused before anything is read (caseforge.outputs): the warehouse's own files, a file that is not a replay file
    out = check_output_path(args.out, settings, "the replay file", replaced=True)
    check_replaceable_file(out, not_a_replay_file, "the replay file")
    con = connect(settings.db_path, read_only=True)
    try:
        check_step(args.step, con)
        written = export_replay(con, out, step=args.step)
    finally:
        con.close()
    if written == 0:
        raise CommandFailed([f"no cached answers{' for step ' + args.step if args.step else ''} to export; "
                             f"{args.out} not written"])
    print(f"wrote {written} replay record(s) to {args.out}")
    return 0
