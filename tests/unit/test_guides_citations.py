"""Citation parsing on hand-written guide sentences: the noise and forms the real guides show."""
from __future__ import annotations

from caseforge.tasks.guides.citations import citation_rows, expand_pinpoints, extract_citations


def test_pinpoint_noise_and_forms_expand():
    assert expand_pinpoints("§§ 55- 61") == list(range(55, 62))
    assert expand_pinpoints("§ § 138 -139") == [138, 139]
    assert expand_pinpoints("§§ 56 and 57") == [56, 57]
    assert expand_pinpoints("§§ 123-28") == list(range(123, 129))
    assert expand_pinpoints("§§ 30, 34-35 and 40") == [30, 34, 35, 40]


def test_article_and_rule_references_are_not_citations():
    text = ("Under Article 6 § 1 and Rule 77 §§ 2 and 3 of the Rules of Court, see Article 2 § 2 "
            "and Protocol No. 6 (Article 5 § 1 (c)).")
    assert extract_citations(text) == []


def test_several_cases_in_one_parenthesis_with_signals_and_numbers():
    text = ("The Court so held (Stephens v. Malta (no. 2), 2009, § 60; see also Smith and Others v. France [GC], "
            "2010, § § 138 -139; see, mutatis mutandis, Jones v. the United Kingdom (dec.), 2005; "
            "and, by contrast, Kurt v. Austria [GC], 2021, § 160).12 Later text.")
    found = extract_citations(text)
    assert [c.case_name for c in found] == ["Stephens v. Malta (no. 2)", "Smith and Others v. France",
                                            "Jones v. the United Kingdom", "Kurt v. Austria"]
    assert [c.signal for c in found] == [None, "see also", "see, mutatis mutandis", "by contrast"]
    assert found[0].no_number == "2" and found[0].pinpoints == [60]
    assert found[1].grand_chamber and found[1].pinpoints == [138, 139]
    assert found[2].is_decision and found[2].whole_case
    assert found[3].pinpoints == [160]             # the footnote digit after ")" is not a pinpoint


def test_ibid_and_bare_pinpoints_repeat_the_case_before_them():
    text = ("(Osman v. the United Kingdom, 1998, § 115). The duty is one of means (ibid., § 116). "
            "It must be assessed at the time (§§ 120-121), and the cases cited therein.")
    found = extract_citations(text)
    assert [(c.case_name, c.pinpoints, c.is_ibid, c.repeats_previous) for c in found] == [
        ("Osman v. the United Kingdom", [115], False, False),
        ("Osman v. the United Kingdom", [116], True, False),
        ("Osman v. the United Kingdom", [120, 121], False, True),
    ]


def test_ibid_at_the_start_of_a_paragraph_looks_back_to_the_previous_paragraph():
    paragraphs = [{"para_no": "7", "text": "As held in Opuz v. Turkey, 2009, § 129, the State must act."},
                  {"para_no": "8", "text": "That duty is strict (ibid., §§ 130-131)."},
                  {"para_no": "9", "text": "Nothing cited yet (ibid.)."}]
    rows = citation_rows("g", paragraphs)
    assert [(r["para_no"], r["case_name"], r["pinpoints"], r["is_ibid"], r["whole_case"]) for r in rows] == [
        ("7", "Opuz v. Turkey", [129], False, False),
        ("8", "Opuz v. Turkey", [130, 131], True, False),
        ("9", "Opuz v. Turkey", [], True, True),
    ]


def test_ibid_with_nothing_before_it_has_no_case_name():
    rows = citation_rows("g", [{"para_no": "1", "text": "First words (ibid., § 3)."}])
    assert rows[0]["case_name"] is None and rows[0]["is_ibid"]


def test_names_outside_parentheses_and_split_words():
    text = ("In Jeanty v. Belgium, 2020, where a detainee tried to end his life, the Court applied Article 2 "
            "( § 62). The case of Ribche va and Others v. Bulgaria, 2021, concerned an officer.")
    found = extract_citations(text)
    assert [(c.case_name, c.pinpoints, c.repeats_previous) for c in found] == [
        ("Jeanty v. Belgium", [], False), ("Jeanty v. Belgium", [62], True),
        ("Ribcheva and Others v. Bulgaria", [], False)]


def test_an_unchanged_guides_citations_keep_their_rows_and_a_changed_resolution_replaces_them(tmp_path):
    """curated.guide_citations is what the AQuAECHR builder reads: rewritten on every ingest (a fresh
    updated_at), its fingerprint changed and the builder ran again on an unchanged night."""
    from caseforge.warehouse.connection import connect
    from caseforge.warehouse.statements import run_sql

    con = connect(tmp_path / "w.duckdb")
    columns = "guide_id, para_no, ordinal, case_name, whole_case, raw_citation, itemid, raw_sha256"

    def load(itemid):
        run_sql(con, "ops/clear_staging_table.sql", identifiers={"table": "guide_citations"})
        con.execute(f"INSERT INTO staging.guide_citations ({columns}) VALUES "
                    "('g', '1', 1, 'Malyy v. Ukraine', false, 'Malyy v. Ukraine, 2019', ?, 'p'), "
                    "('g', '2', 1, 'Uysal v. Turkey', true, 'Uysal v. Turkey, 2007', NULL, 'p')", [itemid])
        run_sql(con, "guides/curate_guide_citations.sql")
        return con.execute("SELECT para_no, itemid, updated_at FROM curated.guide_citations ORDER BY para_no").fetchall()

    first = load(None)
    assert load(None) == first                                    # same rows, same updated_at
    resolved = load("001-190000")                                 # a judgment arrived: resolution improved
    assert [(p, i) for p, i, _ in resolved] == [("1", "001-190000"), ("2", None)]
    assert all(after > before for (_, _, after), (_, _, before) in zip(resolved, first))
