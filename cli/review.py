"""`caseforge review push|pull|report BENCHMARK`: people measure the judge on Label Studio (docs/review.md).

push sends a stratified sample of the benchmark's items to its Label Studio project; pull brings the annotations
back into the warehouse (refused ones with their reasons: exit 1); report prints the judge card. A Label Studio
that does not answer is one line and exit 2; push and pull are runs of their own in ops.runs."""
from __future__ import annotations

import argparse
import json

from caseforge.cli.common import CommandError, CommandFailed, add_db_option
from caseforge.review.views import VIEWS


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("review", help="people measure the judge: push a sample to Label Studio, pull the "
                                           "annotations, report the agreement")
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for action, text in (("push", "send a stratified sample of the benchmark's items to its Label Studio project"),
                         ("pull", "bring the project's annotations into the warehouse (review.annotations)"),
                         ("report", "print the judge card: the judge's agreement with the people, with intervals")):
        one = actions.add_parser(action, help=text)
        one.add_argument("benchmark", choices=sorted(VIEWS), metavar="BENCHMARK",
                         help=f"one of {', '.join(sorted(VIEWS))}")
        if action == "report":
            one.add_argument("--format", choices=("text", "json"), default="text")
        add_db_option(one)
        one.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from caseforge.review.commands import pull_report, push_report
    from caseforge.review.labelstudio import ReviewUnreachable
    from caseforge.review.loop import NothingToReview
    from caseforge.session import run_session
    from caseforge.settings import load_settings

    settings = load_settings(args.db)
    if args.action == "report":
        return _report(settings, args)
    if not settings.file.review.url:
        raise CommandError(["no Label Studio server: set [review] url in the settings file (docs/review.md)"])
    try:
        with run_session(settings, "review", f"{args.action} {args.benchmark}") as session:
            work = push_report if args.action == "push" else pull_report
            line = work(settings, session.con, args.benchmark, session.report)
    except (ReviewUnreachable, NothingToReview, ValueError) as exc:
        raise CommandError([str(exc)]) from None
    print(line)
    if session.report.failures:
        raise CommandFailed(session.report.failures)
    return 0


def _report(settings, args: argparse.Namespace) -> int:
    from caseforge.review.card import review_card
    from caseforge.warehouse.connection import open_warehouse
    from caseforge.warehouse.statements import table_exists

    with open_warehouse(settings.db_path, read_only=True) as con:
        if not table_exists(con, "review.items"):
            raise CommandError([f"nothing reviewed in {settings.db_path}: run `caseforge review push "
                                f"{args.benchmark}` first"])
        card = review_card(con, args.benchmark, settings.file.review)
    if args.format == "json":
        print(json.dumps(card.as_dict(), indent=1, sort_keys=True))
    else:
        print("\n".join(card.lines()))
    return 0
