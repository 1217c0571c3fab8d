import pytest

from caseforge.tasks.casefacts.audit import audit_claims, read_claims_file
from caseforge.tasks.casefacts.names import CaseDirectory, KnownCase


@pytest.mark.samples
def test_released_train_file_reads_and_shows_length_artifact(samples_dir):
    rows = read_claims_file(samples_dir / "casefacts" / "train.json")
    assert len(rows) == 5794
    labels = {r["label"] for r in rows}
    assert labels == {"Supported", "Refuted", "Overruled"}
    csv_rows = read_claims_file(samples_dir / "casefacts" / "train.csv")
    assert [r["label"] for r in csv_rows[:50]] == [r["label"] for r in rows[:50]]
    # Known inverted pair in the release: Shapiro v. McManus (2015) listed as overruling Rucho (2019).
    directory = CaseDirectory([
        KnownCase(1, "Rucho v. Common Cause", __import__("datetime").date(2019, 6, 27), "vacated/remanded", "t"),
        KnownCase(2, "Shapiro v. McManus", __import__("datetime").date(2015, 12, 8), "reversed/remanded", "t"),
    ])
    report = audit_claims(rows, directory, ["test"])
    assert any(d["case_name"] == "Rucho v. Common Cause" and d["overruling_case"] == "Shapiro v. McManus"
               for d in report["date_inverted"])
    per_label = report["length_by_label"]["per_label"]
    assert per_label["Refuted"]["mean_chars"] > per_label["Supported"]["mean_chars"]


@pytest.mark.samples
def test_released_train_split_audit_dates_legacy_cases_by_term_and_never_inverts_a_shared_term(samples_dir):
    """Before: only cases with an API decision date could be checked (12 inverted claims found on the full
    warehouse, the rest "unchecked"). The legacy table's term dates every case it holds."""
    import csv
    from datetime import date

    from caseforge.tasks.casefacts.audit import parse_term, read_known_dates

    with (samples_dir / "oyez" / "legacy_justice_table.csv").open(newline="", encoding="utf-8") as handle:
        legacy = [KnownCase(int(r["ID"]), r["name"], None, r["disposition"] or None, "scotus_legacy", term=r["term"])
                  for r in csv.DictReader(handle)]
    directory = CaseDirectory(legacy)
    directory.add_dates(read_known_dates(samples_dir / "oyez" / "known_overrulings.csv"), "known_overrulings.csv")
    rows = read_claims_file(samples_dir / "casefacts" / "train.json")
    report = audit_claims(rows, directory, ["legacy term", "known overrulings"])
    summary = report["summary"]
    assert summary["overruled_claims_with_overruling_case"] == 457
    assert summary["claims_overruled_checked"] + summary["claims_overruled_unchecked"] == 457
    assert summary["claims_overruled_checked"] > 300 and summary["claims_overruled_inverted"] > 150
    assert set(summary["unchecked_reasons"]) <= {"name matches no case", "no date or term",
                                                 "overruling case is the claim's own case"}
    for item in report["date_inverted"]:
        if item["precision"] == "term":      # strictly earlier terms only: a shared term is never "inverted"
            old, new = (parse_term(item[k].removeprefix("OT ").split(" ")[0]) if item[k].startswith("OT ")
                        else None for k in ("case_decided", "overruling_decided"))
            assert old is None or new is None or new[1] < old[0]
        else:
            assert date.fromisoformat(item["overruling_decided"]) < date.fromisoformat(item["case_decided"])
    for claim in report["per_claim"]:
        assert claim["status"] in ("inverted", "in_order", "cannot_tell", "unchecked") and claim["reason"]
        for pair in claim["pairs"]:
            if pair["verdict"] == "cannot_tell" and pair["precision"] == "term" and not pair["ambiguous"]:
                old, new = parse_term(pair["case_date"]["value"][3:]), parse_term(pair["overruling_date"]["value"][3:])
                if old and new:
                    assert not (new[1] < old[0] or new[0] > old[1])
