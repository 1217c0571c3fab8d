"""`caseforge audit casefacts --claims FILE`: checks a CaseFacts-format claims file against the warehouse."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from caseforge.cli.common import add_db_option
from caseforge.settings import load_settings
from caseforge.warehouse.query import open_for_query


def _audit_casefacts(args: argparse.Namespace) -> int:
    from caseforge.tasks.casefacts.audit import audit_claims, read_claims_file, read_known_dates
    from caseforge.tasks.casefacts.names import load_directory

    rows = read_claims_file(Path(args.claims))
    settings = load_settings(args.db)
    con, _ = open_for_query(settings.db_path, settings.parquet_dir)
    try:
        directory = load_directory(con)
    finally:
        con.close()
    sources = ["curated.scotus_cases.decided_date (day)",
               "curated.scotus_cases.term and curated.scotus_legacy.term (term)"]
    if args.known_overrulings:
        path = Path(args.known_overrulings)
        filled = directory.add_dates(read_known_dates(path), path.name)
        sources.append(f"{path} (day; gave {filled} cases a decision date)")
    else:
        sources.append("no known-overrulings file (--known-overrulings CSV adds its decision days)")
    report = audit_claims(rows, directory, sources)
    if args.format == "json":
        json.dump(report, sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        s = report["summary"]
        print(f"claims: {s['claims']}  labels: {s['labels']}")
        print(f"date sources: {'; '.join(s['date_sources'])}")
        print(f"claims naming an overruling case: {s['overruled_claims_with_overruling_case']}  checked: "
              f"{s['claims_overruled_checked']} (inverted {s['claims_overruled_inverted']}, in order "
              f"{s['claims_overruled_in_order']}, cannot tell {s['claims_overruled_cannot_tell']})  unchecked: "
              f"{s['claims_overruled_unchecked']}")
        for reason, count in s["unchecked_reasons"].items():
            print(f"  unchecked because {reason}: {count}")
        print(f"overruling pairs: {s['overruling_pairs']}  checked: {s['overruling_pairs_checked']} "
              f"({s['overruling_pairs_checked_by_day']} to the day, {s['overruling_pairs_checked_by_term']} to the "
              f"term)  cannot tell: {s['overruling_pairs_cannot_tell']}  date-inverted: {s['date_inverted']}")
        for item in report["date_inverted"]:
            print(f"  INVERTED ({item['precision']}) {item['overruling_case']} ({item['overruling_decided']}, "
                  f"{item['overruling_date_source']}) 'overrules' {item['case_name']} ({item['case_decided']}, "
                  f"{item['case_date_source']})")
        if args.per_claim:
            for claim in report["per_claim"]:
                print(f"  row {claim['row']}: {claim['status']}: {claim['reason']}")
        print(f"unmatched case names: {s['unmatched_case_names']}")
        print(f"claims with leaked identifiers: {s['claims_with_leaked_identifiers']}")
        for label, v in report["length_by_label"]["per_label"].items():
            print(f"  length {label}: n={v['n']} mean={v['mean_chars']} median={v['median_chars']}")
        for key in ("kruskal_wallis", "supported_vs_refuted"):
            if key in report["length_by_label"]:
                print(f"  {key}: {report['length_by_label'][key]}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("audit", help="audit a released dataset file against the warehouse")
    datasets = parser.add_subparsers(dest="dataset", required=True, metavar="DATASET")
    audit = datasets.add_parser("casefacts", help="date-inverted overrulings, unmatched names, leaks, length artifacts")
    audit.add_argument("--claims", required=True, help="claims file (JSON list, JSONL or CSV in CaseFacts format)")
    audit.add_argument("--known-overrulings", "--extra-dates", dest="known_overrulings",
                       help="CSV of known overruling pairs with decision days and terms "
                            "(e.g. samples/oyez/known_overrulings.csv); named in the output")
    audit.add_argument("--per-claim", dest="per_claim", action="store_true",
                       help="text output: one line per claim naming an overruling case, with its status and why")
    audit.add_argument("--format", choices=["text", "json"], default="text")
    add_db_option(audit)
    audit.set_defaults(handler=_audit_casefacts)
