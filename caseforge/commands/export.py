"""`caseforge export DATASET --out DIR`: writes a built dataset. Exporters register in EXPORTERS."""
from __future__ import annotations

import argparse
from pathlib import Path

from caseforge.cli import add_db_option


def _export_casefacts(args: argparse.Namespace) -> int:
    from caseforge.tasks.casefacts.export import export_casefacts_command
    return export_casefacts_command(args.db, Path(args.out))


def _export_scotus(args: argparse.Namespace) -> int:
    from caseforge.config import settings as load_settings
    from caseforge.release_oyez import export_scotus
    from caseforge.warehouse import open_warehouse

    with open_warehouse(load_settings(args.db).db_path, read_only=True) as con:
        release = export_scotus(con, Path(args.out))
    print(f"scotus release written to {release.path} ({len(release.files)} files)")
    return 0


EXPORTERS = {"casefacts": _export_casefacts, "scotus": _export_scotus}


def register(sub: argparse._SubParsersAction) -> None:
    export = sub.add_parser("export", help="export a built dataset (Parquet + JSONL + dataset card)")
    export.add_argument("dataset", choices=sorted(EXPORTERS))
    export.add_argument("--out", required=True, help="output folder")
    add_db_option(export)
    export.set_defaults(handler=lambda args: EXPORTERS[args.dataset](args))
