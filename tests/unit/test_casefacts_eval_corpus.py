"""The SCOTUS corpus the CaseFacts evaluation searches, read from a small warehouse."""
from __future__ import annotations

from caseforge.retrieval.corpora import scotus_corpus
from caseforge.retrieval.tokenize import tokenize
from caseforge.warehouse.connection import connect

API_CASES = [
    # case_id, name, facts, question, conclusion
    (1, "Gideon v. Wainwright", "Gideon was charged with a felony and asked for a lawyer.",
     "Does the right to counsel extend to felony defendants in state courts?",
     "Yes. The Sixth Amendment right to counsel does apply to the states."),
    (2, "Betts v. Brady", "Betts asked for a lawyer and was refused.", None, None),
]
LEGACY_CASES = [(3, "Roe v. Wade", "<p>Roe challenged a Texas law.</p>")]


def _warehouse(path):
    con = connect(path)
    con.executemany("INSERT INTO curated.scotus_cases (case_id, name, facts, question, conclusion, raw_sha256, "
                    "updated_at) VALUES (?, ?, ?, ?, ?, 'x', now())", API_CASES)
    con.executemany("INSERT INTO curated.scotus_legacy (case_id, name, facts, raw_sha256) VALUES (?, ?, ?, 'x')",
                    LEGACY_CASES)
    return con


def test_scotus_corpus_separates_fields_with_real_newlines_not_backslash_n(db_path):
    corpus = scotus_corpus(_warehouse(db_path))
    gideon = corpus.text_of("1")
    assert "\\n" not in gideon
    assert gideon == "\n\n".join(API_CASES[0][2:])
    # no stray "n" glued to the first word of the next field ("ndoes")
    assert "n" not in tokenize(gideon) and not any(t.startswith("ndoes") for t in tokenize(gideon))
    assert all("\\n" not in text for text in corpus.texts)
