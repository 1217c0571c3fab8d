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
