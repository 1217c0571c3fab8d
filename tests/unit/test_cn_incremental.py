"""Chinese judgments: a re-run parses no dump it loaded before, the filters decide only judgments that are new
or were loaded again (written in one statement, earlier decisions left as they were), and the representatives
are not selected again while the kept documents are the same (issue 29)."""
import json
from pathlib import Path

import pytest

from caseforge.settings import load_settings
from caseforge.tasks.cn import curate, ingest
from caseforge.tasks.cn.filters import load_filter_config
from caseforge.warehouse.connection import connect

DOC = (Path(__file__).resolve().parent.parent / "fixtures" / "cn_civil_judgment.txt").read_text(encoding="utf-8").strip()


def _variant(i: int) -> str:
    return DOC.replace("123号", f"{100 + i}号").replace("1万元", f"{i + 1}万元")


def _dump(folder: Path, name: str, first: int, count: int) -> None:
    rows = [{"doc_id": f"g{i}", "full_text": _variant(i)} for i in range(first, first + count)]
    (folder / name).write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")


@pytest.fixture
def calls(monkeypatch):
    """How often the judgment parser, the filters and the representative selection ran."""
    seen = {"parse": 0, "filter": 0, "select": 0}

    def counting(module, name, key):
        real = getattr(module, name)

        def wrapper(*args, **kwargs):
            seen[key] += 1
            return real(*args, **kwargs)
        monkeypatch.setattr(module, name, wrapper)

    counting(ingest, "parse_record", "parse")
    counting(curate, "filter_reasons", "filter")
    counting(curate, "select_representatives", "select")
    return seen


def _decisions(settings) -> dict:
    con = connect(settings.db_path)
    try:
        return {doc: (kept, decided) for doc, kept, decided in con.execute(
            "SELECT doc_id, kept, decided_at FROM curated.cn_filter_decisions").fetchall()}
    finally:
        con.close()


def test_a_rerun_parses_and_decides_only_what_is_new(tmp_path, calls):
    folder = tmp_path / "dumps"
    folder.mkdir()
    _dump(folder, "a.jsonl", 0, 4)
    (folder / "b_bad.jsonl").write_bytes(b"[1, 2]\n")          # quarantined: read again every run
    settings = load_settings(tmp_path / "cf.duckdb")
    relaxed = tmp_path / "relaxed.json"
    relaxed.write_text(json.dumps({"name": "relaxed", "min_facts_chars": 10, "exclude_simplified": []}))

    first = ingest.refresh(settings, from_dir=str(folder), filters=str(relaxed), select_n=2, clusters=2)
    assert (first.counts["new"], calls["parse"], calls["filter"], calls["select"]) == (4, 4, 4, 1), (first.counts, calls)
    decided = _decisions(settings)

    again = ingest.refresh(settings, from_dir=str(folder), filters=str(relaxed), select_n=2, clusters=2)
    assert (calls["parse"], calls["filter"], calls["select"]) == (4, 4, 1), calls
    assert (again.counts["new"], again.counts["changed"], again.counts["unchanged"]) == (0, 0, 4), again.counts
    assert _decisions(settings) == decided

    _dump(folder, "c.jsonl", 4, 2)                           # a night with two new judgments
    third = ingest.refresh(settings, from_dir=str(folder), filters=str(relaxed), select_n=2, clusters=2)
    assert (third.counts["new"], calls["parse"], calls["filter"], calls["select"]) == (2, 6, 6, 2), (third.counts, calls)
    now = _decisions(settings)
    assert {doc: now[doc] for doc in decided} == decided, "decisions of unchanged judgments were written again"
    assert sorted(now) == [f"g{i}" for i in range(6)] and all(kept for kept, _ in now.values())
    assert third.counts["filter_kept"] == 6 and third.counts["filter_decided"] == 2, third.counts
    con = connect(settings.db_path)
    assert curate.filter_reason_counts(con, load_filter_config(str(relaxed))) == []
    con.close()
