import json
from datetime import date

from caseforge.tasks.casefacts.audit import audit_claims, read_claims_file
from caseforge.tasks.casefacts.leaks import find_leaks
from caseforge.tasks.casefacts.names import CaseDirectory, KnownCase, normalise_name, split_case_names
from caseforge.tasks.casefacts.temporal import check_overruling, is_reversal


def _directory():
    return CaseDirectory([
        KnownCase(1, "Plessy v. Ferguson", date(1896, 5, 18), "affirmed", "scotus_cases"),
        KnownCase(2, "Brown v. Board of Education of Topeka (1)", date(1954, 5, 17), "reversed", "scotus_cases"),
        KnownCase(3, "Roth v. United States", date(1957, 6, 24), "affirmed", "scotus_cases"),
        KnownCase(4, "Memoirs v. Massachusetts", None, "reversed", "scotus_legacy"),
    ])


def test_name_normalisation_handles_escapes_versus_and_abbreviations():
    assert normalise_name("Caf\\u00e9 Co. vs. U.S.") == normalise_name("Café Company v. United States")
    assert split_case_names('["A v. B", "C v. D"]') == ["A v. B", "C v. D"]
    assert split_case_names("A v. B; C v. D") == ["A v. B", "C v. D"]
    assert split_case_names(None) == []


def test_lookup_drops_parenthetical_only_when_unique():
    directory = _directory()
    assert directory.lookup("Brown v. Board of Education of Topeka").case_id == 2
    assert directory.lookup("Nobody v. Nothing") is None


def test_temporal_rule_needs_newer_reversal():
    assert check_overruling(date(1896, 5, 18), date(1954, 5, 17), "reversed/remanded").accepted
    older = check_overruling(date(1954, 5, 17), date(1896, 5, 18), "reversed")
    assert not older.accepted and "not after" in older.reason
    same_day = check_overruling(date(1954, 5, 17), date(1954, 5, 17), "reversed")
    assert not same_day.accepted
    affirmed = check_overruling(date(1896, 5, 18), date(1954, 5, 17), "affirmed")
    assert not affirmed.accepted and "not a reversal" in affirmed.reason
    assert not check_overruling(None, date(1954, 5, 17), "reversed").accepted
    assert is_reversal("reversed in-part/remanded") and not is_reversal("vacated/remanded")


def test_leaks_found_and_clean_claim_passes():
    leaks = find_leaks("The court held in 1957 that Roth could not sell; see inRoth", ["Roth v. United States"])
    kinds = {leak.split(":")[0] for leak in leaks}
    assert kinds == {"year", "court phrasing", "party name", "glued words"}
    assert find_leaks("Obscene material is not protected speech.", ["Roth v. United States"]) == []


def test_audit_reports_inverted_unmatched_and_unchecked(tmp_path):
    rows = [
        {"claim": "Separate facilities may be equal.", "case_name": ["Plessy v. Ferguson"],
         "overruling_case": "Brown v. Board of Education of Topeka (1)", "label": "Overruled"},
        {"claim": "Schools may be segregated.", "case_name": ["Brown v. Board of Education of Topeka (1)"],
         "overruling_case": "Plessy v. Ferguson", "label": "Overruled"},
        {"claim": "Some books are obscene.", "case_name": ["Roth v. United States"],
         "overruling_case": "Memoirs v. Massachusetts", "label": "Overruled"},
        {"claim": "A short claim.", "case_name": ["Unknown v. Case"], "overruling_case": None, "label": "Supported"},
        {"claim": "A considerably longer refuted claim text here.", "case_name": ["Roth v. United States"],
         "overruling_case": None, "label": "Refuted"},
    ]
    path = tmp_path / "claims.json"
    path.write_text(json.dumps(rows))
    report = audit_claims(read_claims_file(path), _directory(), ["test"])
    assert report["summary"]["overruling_pairs"] == 3
    assert report["summary"]["overruling_pairs_checked"] == 2
    assert [(d["case_name"], d["overruling_case"]) for d in report["date_inverted"]] == [
        ("Brown v. Board of Education of Topeka (1)", "Plessy v. Ferguson")]
    assert report["date_inverted"][0]["case_decided"] == "1954-05-17"
    assert report["unchecked_overruling_pairs"][0]["missing"] == ["Memoirs v. Massachusetts"]
    assert report["unmatched_case_names"] == [{"case_name": "Unknown v. Case", "claims": 1}]
    lengths = report["length_by_label"]["per_label"]
    assert lengths["Supported"]["mean_chars"] == len("A short claim.")


def test_csv_format_uses_class_column(tmp_path):
    path = tmp_path / "train.csv"
    path.write_text('claim,case_name,overruling_case,label,class\n"X is y.","[""A v. B""]",,1,Supported\n')
    rows = read_claims_file(path)
    assert rows[0]["label"] == "Supported" and rows[0]["case_name"] == ["A v. B"]
