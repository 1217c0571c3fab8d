"""`caseforge export DATASET --out DIR`: a release (Parquet + JSONL, dataset card, croissant.json, manifest) written
into DIR; one subcommand per release in caseforge.flows.registry.RELEASES."""
from __future__ import annotations

import argparse
from pathlib import Path

from caseforge.cli.common import CommandError, add_db_option
from caseforge.flows import registry


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("export", help="write a release of a dataset (Parquet + JSONL, dataset card, croissant.json)")
    releases = parser.add_subparsers(dest="dataset", required=True, metavar="DATASET")
    for name, release in registry.RELEASES.items():
        one = releases.add_parser(name, help=release.description)
        one.add_argument("--out", required=True, help="the release folder to write (replaced as a whole)")
        add_db_option(one)
        one.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from caseforge.config import settings as load_settings
    from caseforge.warehouse import open_warehouse

    with open_warehouse(load_settings(args.db).db_path, read_only=True) as con:
        try:
            release = registry.RELEASES[args.dataset].write(con, Path(args.out))
        except OSError as exc:
            raise CommandError([f"cannot write the {args.dataset} release to {args.out}: "
                                 f"{exc.strerror or exc} ({exc.filename or args.out})"]) from exc
    print(f"{args.dataset} release written to {release.path} ({len(release.files)} files)")
    return 0
