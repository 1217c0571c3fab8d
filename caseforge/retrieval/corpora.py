"""Corpora the pipelines search, read from the warehouse as (doc_id, text) pairs."""
from __future__ import annotations

import duckdb

from caseforge.retrieval.corpus import Corpus
from caseforge.text import html_to_text
from caseforge.warehouse.statements import run_sql


def _clean(text: str) -> str:
    return (html_to_text(text) or "") if "<" in text else text


def scotus_corpus(con: duckdb.DuckDBPyConnection) -> Corpus:
    """SCOTUS cases: facts + question + conclusion (API table), legacy facts for the rest.

    The corpus's composition counts documents by what they hold: `facts+question+conclusion` (the
    paper's corpus keeps only these), `api_partial` (an API case missing one summary) and `facts_only`
    (legacy rows)."""
    rows = run_sql(con, "retrieval/scotus_corpus.sql").fetchall()
    if not rows:
        raise RuntimeError("no SCOTUS cases in curated.scotus_cases / curated.scotus_legacy: run `caseforge ingest oyez` first")
    composition: dict[str, int] = {}
    for _doc_id, _text, _origin, fields in rows:
        composition[fields] = composition.get(fields, 0) + 1
    return Corpus.from_pairs("scotus", ((doc_id, _clean(text)) for doc_id, text, _origin, _fields in rows),
                             composition)


def scotus_case_names(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    return [(case_id, name) for case_id, name in run_sql(con, "retrieval/scotus_names.sql").fetchall()]


def barexam_corpus(con: duckdb.DuckDBPyConnection) -> Corpus:
    rows = run_sql(con, "retrieval/barexam_corpus.sql").fetchall()
    if not rows:
        raise RuntimeError("no Bar Exam passages in curated.barexam_passages: run `caseforge ingest barexam` first")
    return Corpus.from_pairs("barexam", rows)
