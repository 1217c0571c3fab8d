"""The block → paragraph rules on hand-written blocks: older templates, opinions, headings vs paragraphs."""
from __future__ import annotations

from caseforge.tasks.hudoc.paragraphs import Block, build_rows


def _rows(*blocks):
    parsed = build_rows("001-1", [b if isinstance(b, Block) else Block(b) for b in blocks], {}, "html", "0" * 64)
    assert parsed.problems == []
    return [(r["part"], r["section"], r["para_no"], r["text"]) for r in parsed.rows]


def test_older_template_headings_set_the_section():
    rows = _rows("In the case of X v. Y,", "PROCEDURE", "1.  The case was referred to the Court.",
                 "AS TO THE FACTS", Block("I.  THE PARTICULAR CIRCUMSTANCES OF THE CASE", heading_style=True),
                 "2.  The applicant was born in 1950.", "PROCEEDINGS BEFORE THE COMMISSION",
                 "3.  The applicant applied to the Commission.", "AS TO THE LAW", "4.  The Court notes.",
                 "FOR THESE REASONS, THE COURT UNANIMOUSLY", "1.  Holds that there has been a violation;",
                 "2.  Holds that the respondent State is to pay;", "Done in English, and notified in writing.",
                 "Signature line")
    assert rows == [
        ("judgment", "PROCEDURE", "1", "The case was referred to the Court."),
        ("judgment", "THE FACTS", "2", "The applicant was born in 1950."),
        ("judgment", "PROCEEDINGS BEFORE THE COMMISSION", "3", "The applicant applied to the Commission."),
        ("judgment", "THE LAW", "4", "The Court notes."),
        ("judgment", "OPERATIVE", "1", "Holds that there has been a violation;"),
        ("judgment", "OPERATIVE", "2", "Holds that the respondent State is to pay;"),
    ]


def test_numbered_headings_quotes_and_opinions_restarting_at_one():
    rows = _rows("THE LAW", "1.  The applicant complained under Article 6, which reads:",
                 Block("“1.  In the determination of his civil rights ...", quote_style=True),
                 Block("2.  Everyone charged ...", quote_style=True),
                 "1.  Admissibility", "2.  The Court notes that the complaint is admissible.",
                 "(a)  The parties’ submissions", "3.  The Government disagreed.",
                 "FOR THESE REASONS, THE COURT", "1.  Holds;", "Done in French.",
                 "PARTLY DISSENTING OPINION OF JUDGE Z", "1.  I disagree.", "2.  Here is why.",
                 "CONCURRING OPINION OF JUDGE W", "I agree with the outcome.", "But not with the reasons.")
    assert [r[:3] for r in rows] == [
        ("judgment", "THE LAW", "1"), ("judgment", "THE LAW", "2"), ("judgment", "THE LAW", "3"),
        ("judgment", "OPERATIVE", "1"), ("opinion:1", None, "1"), ("opinion:1", None, "2"),
        ("opinion:2", None, None), ("opinion:2", None, None)]
    assert rows[0][3] == ("The applicant complained under Article 6, which reads:\n"
                          "“1. In the determination of his civil rights ...\n2. Everyone charged ...")
