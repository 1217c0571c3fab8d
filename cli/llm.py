"""`caseforge llm models|ping|stats|export-replay`: look at and try the LLM layer."""
from __future__ import annotations

import argparse
import fnmatch
import importlib.util
import sys

from caseforge.cli.common import (CommandError, CommandFailed, add_db_option, add_format_option, add_mirror_option,
                                  notes_out, open_query,
                                  unknown_value)
from caseforge.cli.rows import print_rows, spool_query_answer
from caseforge.llm.backends import REGISTRY
from caseforge.llm.config import ROLES, backend_for, llm_choice
from caseforge.settings import load_settings
from caseforge.settings_file import user_file

CACHE_KEY_NOTE = ("cached by request: model name, messages, sampling parameters, output schema, prompt template "
                  "(id and content hash); not by backend or endpoint, so one model name served two ways shares "
                  "its answers. `--refresh` (build, eval, run nightly) asks again; replaced answers are kept in "
                  "ops.llm_call_history (the `replaced` column)")

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
    ping.add_argument("--timeout-s", type=float, default=None,
                      help="how long the endpoint may take to answer (default: the settings' timeout_s, at most 30)")
    ping.set_defaults(handler=run_ping)

    check = commands.add_parser(
        "check", help="every step's backend, model and endpoint per role, and two tiny requests (with and without a "
                      "JSON schema) to each distinct one; exit 2 with one line per problem")
    check.add_argument("--all", dest="all_pipelines", action="store_true",
                       help="every pipeline, not only those the nightly runs")
    check.add_argument("--no-requests", dest="no_requests", action="store_true",
                       help="resolve the configuration only; send nothing")
    check.add_argument("--timeout-s", type=float, default=None,
                       help="how long each endpoint may take to answer (default: the settings' timeout_s, at most 60)")
    add_format_option(check)
    check.set_defaults(handler=run_check)

    stats = commands.add_parser("stats", help="calls, ok/failed, tokens, model seconds and the model that served, per "
                                              "step, from the cache; --run N: what run N's calls cost")
    stats.add_argument("--step", help="one step only")
    stats.add_argument("--run", type=int, metavar="N",
                       help="what run N (a nightly: with the runs of its stages) asked, per run and step, and per "
                            "kept item; cache hits cost nothing")
    add_format_option(stats)
    add_db_option(stats)
    add_mirror_option(stats)
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
    return llm_choice(load_settings(), step=args.step, role=args.role, backend=args.backend, model=args.model,
                      replay_file=args.replay_file, base_url=getattr(args, "base_url", None))


def run_models(args: argparse.Namespace) -> int:
    """Each role's choice, then each configured step's, then the pipelines' steps and their roles."""
    from caseforge.flows import registry

    check_step(args.step)
    settings = load_settings()
    rows = []
    for role in ROLES:
        try:
            choice = llm_choice(settings, role=role, backend=args.backend, model=args.model,
                                replay_file=args.replay_file)
            rows.append(("(any)", role, choice.backend, choice.model, choice.family, _options(choice)))
        except ValueError as exc:
            rows.append(("(any)", role, args.backend or "-", "-", "-", str(exc)))
    for name, entry in sorted(registry.llm_steps().items()):
        for step, role in sorted(entry.items()):
            try:
                choice = llm_choice(settings, step=step, role=role, backend=args.backend, model=args.model,
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
    found = user_file(settings.config_file)
    print(f"settings: caseforge/defaults.toml{' + ' + str(found) if found else ''}", file=notes_out(args.format))
    if args.format == "table":
        print_rows(["backend", "installed"], sorted(installed.items()), "table")
    return 0


def _options(choice) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(choice.options.items()))


def run_ping(args: argparse.Namespace) -> int:
    """One tiny request without a schema: is the endpoint up, serving the model configured, and answering?
    (`llm check` also checks the schema, every role and every step.) Every failure exits 2, as `llm check`'s."""
    from caseforge.llm.backends.openai_compat import ServedModelMismatch
    from caseforge.llm.check import EMPTY_HINT, endpoint_of, free_text_request, probe_timeout

    choice = _choice(args)
    if choice.backend == "openai":
        choice.options.update(timeout_s=probe_timeout(choice.options, args.timeout_s, 30.0), max_retries=1)
    who = f"{choice.describe()} at {endpoint_of(choice)[0]}"
    try:
        [completion] = backend_for(choice).complete_batch([free_text_request()])
    except ServedModelMismatch as exc:
        raise CommandError([f"{who}: {exc}"]) from exc
    except Exception as exc:   # the point of ping is to say why it is not answering
        raise CommandError([f"{who} did not answer: {type(exc).__name__}: {exc}"]) from exc
    if completion.error:
        raise CommandError([f"{who} did not answer: {completion.error}"])
    text = (completion.text or "").strip()
    if not text:
        raise CommandError([f"{who} answered with empty content: {EMPTY_HINT}"])
    latency = f"{completion.latency_s * 1000:.0f} ms" if completion.latency_s is not None else "?"
    print(f"{who} answered in {latency}: {text[:80]!r}")
    return 0


# a nightly option of a builder or evaluation ([nightly.builders.<name>]) that names a role's model
_NIGHTLY_MODEL_OPTIONS = {"model": ("generator", "system"), "validator_model": ("validator",),
                          "judge_model": ("judge",), "nli_model": ("nli",)}


def pipeline_uses(all_pipelines: bool = False) -> list:
    """Every (pipeline, step, role) the nightly runs (or every pipeline), with the choice each resolves to:
    the settings, the environment, and the nightly's own options for that pipeline ([nightly.builders.<name>],
    [nightly.evaluations.<name>]: llm, model, validator_model, judge_model, models)."""
    from caseforge.flows import registry
    from caseforge.llm.check import Use

    settings = load_settings()
    uses = []
    for verb, section, group in (("build", "builders", registry.BUILDERS), ("eval", "evaluations", registry.EVALUATIONS)):
        for name, entry in sorted(group.items()):
            steps = entry.llm_steps()
            if not steps or not (all_pipelines or entry.nightly):
                continue
            opts = (getattr(settings.file.nightly, section).get(name) or {}) if entry.nightly else {}
            for step, role in sorted(steps.items()):
                models = [None]
                if role == "system" and opts.get("models"):
                    models = list(opts["models"])
                else:
                    models = [next((opts[k] for k, roles in _NIGHTLY_MODEL_OPTIONS.items()
                                    if role in roles and opts.get(k)), None)]
                backend = opts.get("judge_llm") if role == "judge" and opts.get("judge_llm") else opts.get("llm")
                for model in models:
                    use = Use(f"{verb} {name}", step, role, allow_same_family=bool(opts.get("allow_same_family")))
                    try:
                        use.choice = llm_choice(settings, step=step, role=role, backend=backend, model=model)
                    except ValueError as exc:
                        use.problem = str(exc).replace(f"step {step}, ", "")
                    uses.append(use)
    return uses


def run_check(args: argparse.Namespace) -> int:
    from caseforge.llm.check import family_findings, group, send_probe

    uses = pipeline_uses(args.all_pipelines)
    probes = group(uses)
    fanout = load_settings().file.fanout
    out = notes_out(args.format)
    if fanout.enabled:
        print(f"[fanout] pool {fanout.pool}: shard workers answer every step with their own endpoints and model "
              "files; run `caseforge llm check` on a worker machine to check them. Nothing sent from here.", file=out)
    elif not args.no_requests:
        for probe in probes:
            print(f"checking {probe.backend}:{probe.model} at {probe.endpoint} ...", file=out, flush=True)
            send_probe(probe, timeout_s=args.timeout_s)     # the flag, when given, wins over the settings file
    by_use = {id(use): probe for probe in probes for use in probe.uses}
    rows = []
    for use in uses:
        probe = by_use.get(id(use))
        if use.choice is None:
            rows.append((use.pipeline, use.step, use.role, "-", "-", "-", "no model"))
        else:
            rows.append((use.pipeline, use.step, use.role, use.choice.backend, use.choice.model, probe.endpoint,
                         probe.status))
    print_rows(["pipeline", "step", "role", "backend", "model", "endpoint", "check"], rows, args.format)
    family_problems, family_warnings = family_findings(uses)
    for warning in family_warnings:
        print(f"warning: {warning}", file=sys.stderr)
    unresolved: dict[tuple, list[str]] = {}
    for use in uses:
        if use.problem:
            unresolved.setdefault((use.pipeline, use.problem), []).append(use.step)
    problems = [f"{pipeline} ({len(steps)} step{'s' if len(steps) > 1 else ''}: {', '.join(steps)}): {problem}"
                for (pipeline, problem), steps in unresolved.items()]
    problems += family_problems + [problem for p in probes for problem in p.problems]
    if problems:
        raise CommandError(problems)
    return 0


def run_stats(args: argparse.Namespace) -> int:
    from caseforge.warehouse.statements import sql_text
    settings = load_settings(args.db)
    con, _ = open_query(args, settings)
    try:
        check_step(args.step, con)
        if args.run is not None:
            return _run_cost(con, args)
        cursor = con.execute(sql_text("llm/stats.sql"), {"step": args.step})
        answer = spool_query_answer(con, cursor, args.format)
    finally:
        con.close()
    answer.print_to()
    print(CACHE_KEY_NOTE, file=sys.stderr)
    return 0


def _run_cost(con, args: argparse.Namespace) -> int:
    """`llm stats --run N`: what run N and the runs inside it asked, per run and step, then one line of totals
    and the cost per kept item (docs/llm.md, "What a run cost")."""
    from caseforge.warehouse.statements import sql_text

    found, kept = con.execute(sql_text("llm/run_kept_items.sql"), {"run": args.run}).fetchone()
    if not found:
        raise CommandError([f"no run {args.run} in ops.runs (`caseforge status` lists the runs)"])
    cursor = con.execute(sql_text("llm/run_costs.sql"), {"run": args.run})
    columns = [d[0] for d in cursor.description]
    rows = [row for row in cursor.fetchall() if args.step is None or row[columns.index("step")] == args.step]
    print_rows(columns, rows, args.format)
    total = {name: sum(row[columns.index(name)] for row in rows)
             for name in ("calls", "prompt_tokens", "completion_tokens", "model_s")}
    line = (f"run {args.run}{' and the runs inside it' if len({r[0] for r in rows}) > 1 else ''}: {total['calls']:,} "
            f"call(s), {total['prompt_tokens']:,} prompt + {total['completion_tokens']:,} completion tokens, "
            f"{total['model_s']:,.1f} model-seconds (cache hits cost nothing)")
    if kept:
        tokens = (total["prompt_tokens"] + total["completion_tokens"]) / kept
        line += f"; {kept:,} item(s) kept: {tokens:,.0f} tokens and {total['model_s'] / kept:,.2f} model-seconds each"
    print(line, file=notes_out(args.format))
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
