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


def _claims_file(tmp_path, rows):
    path = tmp_path / "claims.json"
    path.write_text(json.dumps([{"label": "Overruled", **row} for row in rows]))
    return read_claims_file(path)


def _dated_directory():
    return CaseDirectory([
        # API cases: decision day and term
        KnownCase(10, "Miranda v. Arizona", date(1966, 6, 13), "reversed", "scotus_cases", term="1965"),
        KnownCase(11, "Roe v. Wade", date(1973, 1, 22), "reversed", "scotus_cases", term="1971"),
        # legacy rows: a term only (the legacy table carries no decision date)
        KnownCase(20, "Furman v. Georgia", None, "reversed", "scotus_legacy", term="1971"),
        KnownCase(21, "Mapp v. Ohio", None, "reversed", "scotus_legacy", term="1960"),
        KnownCase(22, "Gregg v. Georgia", None, "affirmed", "scotus_legacy", term="1975"),
        KnownCase(23, "Wolf v. Colorado", None, "affirmed", "scotus_legacy", term="1940-1955"),
        KnownCase(24, "Undated v. Nobody", None, None, "scotus_legacy"),
    ])


def test_audit_dates_legacy_cases_by_their_term_and_says_the_precision(tmp_path):
    rows = _claims_file(tmp_path, [
        # Mapp (OT 1960) cannot overrule Miranda (decided 1966): inverted, known to the term
        {"claim": "a", "case_name": ["Miranda v. Arizona"], "overruling_case": "Mapp v. Ohio"},
        # Gregg (OT 1975) after Furman (OT 1971): in order, known to the term
        {"claim": "b", "case_name": ["Furman v. Georgia"], "overruling_case": "Gregg v. Georgia"},
        # Mapp (OT 1960) after Wolf (a term in 1940-1955): in order
        {"claim": "c", "case_name": ["Wolf v. Colorado"], "overruling_case": "Mapp v. Ohio"},
    ])
    report = audit_claims(rows, _dated_directory(), ["test"])
    assert report["summary"]["overruling_pairs_checked"] == 3
    assert [(d["case_name"], d["overruling_case"], d["precision"]) for d in report["date_inverted"]] == [
        ("Miranda v. Arizona", "Mapp v. Ohio", "term")]
    inverted = report["date_inverted"][0]
    assert inverted["case_decided"] == "1966-06-13" and inverted["overruling_decided"] == "OT 1960"
    assert inverted["overruling_date_source"] == "scotus_legacy term"


def test_a_pair_in_the_same_term_is_cannot_tell_never_inverted(tmp_path):
    rows = _claims_file(tmp_path, [
        # Roe decided 1973-01-22 in OT 1971; Furman is OT 1971 (decided earlier that term, but only the
        # term is known): cannot tell which came first
        {"claim": "a", "case_name": ["Roe v. Wade"], "overruling_case": "Furman v. Georgia"},
        {"claim": "b", "case_name": ["Furman v. Georgia"], "overruling_case": "Roe v. Wade"},
        # a term inside a range of terms is not ordered either
        {"claim": "c", "case_name": ["Wolf v. Colorado"], "overruling_case": "Wolf v. Colorado; Furman v. Georgia"},
    ])
    report = audit_claims(rows, _dated_directory(), ["test"])
    assert report["date_inverted"] == []
    verdicts = [(p["case_name"], p["overruling_case"], p["verdict"], p["precision"])
                for claim in report["per_claim"] for p in claim["pairs"]]
    assert ("Roe v. Wade", "Furman v. Georgia", "cannot_tell", "term") in verdicts
    assert ("Furman v. Georgia", "Roe v. Wade", "cannot_tell", "term") in verdicts
    assert report["summary"]["overruling_pairs_cannot_tell"] == 2


def test_audit_reports_per_claim_why_it_was_or_was_not_checked(tmp_path):
    rows = _claims_file(tmp_path, [
        {"claim": "inverted", "case_name": ["Miranda v. Arizona"], "overruling_case": "Mapp v. Ohio"},
        {"claim": "in order", "case_name": ["Mapp v. Ohio"], "overruling_case": "Miranda v. Arizona"},
        {"claim": "unknown name", "case_name": ["Miranda v. Arizona"], "overruling_case": "Nobody v. Nothing"},
        {"claim": "no date", "case_name": ["Undated v. Nobody"], "overruling_case": "Roe v. Wade"},
        {"claim": "own case", "case_name": ["Roe v. Wade"], "overruling_case": "Roe v. Wade"},
        {"claim": "not overruled", "case_name": ["Roe v. Wade"], "overruling_case": None, "label": "Supported"},
    ])
    report = audit_claims(rows, _dated_directory(), ["test"])
    per_claim = {c["claim"]: c for c in report["per_claim"]}
    assert set(per_claim) == {"inverted", "in order", "unknown name", "no date", "own case"}
    assert per_claim["inverted"]["status"] == "inverted"
    assert per_claim["in order"]["status"] == "in_order"
    assert per_claim["unknown name"]["status"] == "unchecked"
    assert per_claim["unknown name"]["reason"] == "'Nobody v. Nothing' matches no case in the warehouse"
    assert per_claim["no date"]["reason"] == "'Undated v. Nobody' has no decision date or term in any source"
    assert per_claim["own case"]["reason"] == "the overruling case is the claim's own case"
    summary = report["summary"]
    assert summary["claims_overruled_checked"] == 2 and summary["claims_overruled_inverted"] == 1
    assert summary["claims_overruled_unchecked"] == 3
    assert summary["unchecked_reasons"] == {"name matches no case": 1, "no date or term": 1,
                                           "overruling case is the claim's own case": 1}


def test_known_overrulings_give_day_dates_to_cases_the_warehouse_dates_by_term(tmp_path):
    from caseforge.tasks.casefacts.audit import read_known_dates

    csv_path = tmp_path / "known.csv"
    csv_path.write_text("overruled_name,overruled_term,overruled_decided,overruling_name,overruling_term,"
                        "overruling_decided\nFurman v. Georgia,1971,1972-06-29,Gregg v. Georgia,1975,1976-07-02\n")
    directory = _dated_directory()
    directory.add_dates(read_known_dates(csv_path), "known_overrulings.csv")
    rows = _claims_file(tmp_path, [{"claim": "b", "case_name": ["Furman v. Georgia"],
                                    "overruling_case": "Gregg v. Georgia"}])
    pair = audit_claims(rows, directory, ["test"])["per_claim"][0]["pairs"][0]
    assert (pair["verdict"], pair["precision"]) == ("in_order", "day")
    assert pair["case_date"] == {"value": "1972-06-29", "precision": "day", "source": "known_overrulings.csv"}
