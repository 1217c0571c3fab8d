"""`caseforge export DATASET --out DIR|URL`: a release (Parquet + JSONL, dataset card, croissant.json, manifest) written
into DIR, or to a store URL (caseforge.release.stored); one subcommand per release in caseforge.flows.registry.RELEASES."""
from __future__ import annotations

import argparse

from caseforge.cli.common import CommandError, CommandFailed, add_db_option
from caseforge.disk_full import disk_full_line
from caseforge.flows import registry


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("export", help="write a release of a dataset (Parquet + JSONL, dataset card, croissant.json)")
    releases = parser.add_subparsers(dest="dataset", required=True, metavar="DATASET")
    for name, release in registry.RELEASES.items():
        one = releases.add_parser(name, help=release.description)
        one.add_argument("--out", required=True,
                         help="the release folder to write: a new or empty folder, or an earlier release of this "
                              "dataset, which is replaced as a whole (anything else is refused); or a store URL "
                              "(s3://bucket/prefix, gs://bucket/prefix) holding nothing or this dataset's releases")
        add_db_option(one)
        one.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from caseforge.settings import load_settings
    from caseforge.outputs import check_output_path
    from caseforge.release.stored import is_store_url, local_folder, prepare_store_release
    from caseforge.release.writer import prepare_release_folder
    from caseforge.warehouse.connection import open_warehouse

    settings = load_settings(args.db)
    # refused before anything is read (caseforge.outputs): the warehouse's own files, a symbolic link, a
    # folder holding anything but this dataset's earlier release; on a store, one that cannot be written
    if is_store_url(args.out):
        out = args.out
        prepare_store_release(out, args.dataset)
    else:
        out = check_output_path(local_folder(args.out), settings, f"the {args.dataset} release", replaced=True)
        prepare_release_folder(out, args.dataset)
    from caseforge.release import ReleaseHeld

    with open_warehouse(settings.db_path, read_only=True) as con:
        try:
            release = registry.RELEASES[args.dataset].write(con, out)
        except ReleaseHeld as exc:          # the release policy's verdict ([review.policy]): exit 1, one line
            raise CommandFailed([str(exc)]) from None
        except OSError as exc:
            full = disk_full_line(exc, f"export {args.dataset}", local_folder(args.out) if not is_store_url(out) else None)
            if full:
                raise CommandFailed([full]) from exc
            raise CommandError([f"cannot write the {args.dataset} release to {args.out}: "
                                 f"{exc.strerror or exc} ({exc.filename or args.out})"]) from exc
    if release.unchanged:       # the same rows, card and files: said, never passed off as a new release
        print(f"{args.dataset} release unchanged: {release.path} already holds this release, byte for byte "
              f"({'nothing uploaded' if is_store_url(args.out) else 'its files rewritten as they were'})")
    else:
        print(f"{args.dataset} release written to {release.path} ({len(release.files)} files)")
    return 0
