"""Dump import (encodings, bad files), idempotent curation, filters and representative selection."""
import codecs
import json
from pathlib import Path

import numpy as np
import pytest

from caseforge.archive import RawArchive
from caseforge.stage_report import StageReport
from caseforge.tasks.cn import curate, ingest
from caseforge.tasks.cn.filters import FilterConfig, filter_reasons, load_filter_config
from caseforge.tasks.cn.select import EmbedderError, embed, quotas, select_representatives
from caseforge.warehouse.connection import connect

DOC = (Path(__file__).resolve().parent.parent / "fixtures" / "cn_civil_judgment.txt").read_text(encoding="utf-8").strip()


def _variant(i: int) -> str:
    return DOC.replace("123号", f"{100 + i}号").replace("1万元", f"{i + 1}万元")


@pytest.fixture
def dump_dir(tmp_path):
    folder = tmp_path / "dumps"
    folder.mkdir()
    rows = [{"doc_id": f"g{i}", "full_text": _variant(i)} for i in range(3)]
    (folder / "a_gbk.jsonl").write_bytes("\n".join(json.dumps(r, ensure_ascii=False) for r in rows).encode("gbk"))
    csv_text = "doc_id,full_text\n" + "".join(f'b{i},"{_variant(i + 3)}"\n' for i in range(2))
    (folder / "b_bom.csv").write_bytes(codecs.BOM_UTF8 + csv_text.encode("utf-8"))
    (folder / "c_bad.jsonl").write_bytes(b'{"doc_id": "x1", "full_text": ""}\n[1, 2]\n')
    (folder / "d_broken.json").write_bytes(b"{not json")
    return folder


def _ingest(con, folder, report):
    for batch in ingest.batches_of_records(con, 1, RawArchive(con), folder, ingest.dump_files(folder), report):
        ingest.load_judgments(con, 1, ingest.parse_batch(con, 1, batch, report), report)


def test_dumps_in_any_encoding_load_and_bad_rows_are_quarantined(db_path, dump_dir):
    con = connect(db_path)
    report = StageReport("t")
    _ingest(con, dump_dir, report)
    assert report.counts["loaded"] == 5 and report.counts["new"] == 5
    rows = con.execute("SELECT doc_id, case_no, complete, simplified FROM curated.cn_judgments ORDER BY doc_id").fetchall()
    assert [r[0] for r in rows] == ["b0", "b1", "g0", "g1", "g2"]
    assert rows[2][1:] == ("（2019）京0108民初100号", True, "简易程序")
    keys = sorted(r[0] for r in con.execute("SELECT source_key FROM ops.quarantine").fetchall())
    assert keys == ["file/c_bad.jsonl line 1", "file/c_bad.jsonl line 2", "file/d_broken.json"]
    assert con.execute("SELECT count(*) FROM ops.raw_payloads WHERE source = 'cn'").fetchone()[0] == 4
    again = StageReport("t2")
    _ingest(con, dump_dir, again)
    assert again.counts["unchanged"] == 5 and again.counts.get("new", 0) == 0
    assert con.execute("SELECT count(*) FROM curated.cn_judgments").fetchone()[0] == 5
    con.close()


def test_filters_record_every_reason(db_path, dump_dir):
    con = connect(db_path)
    report = StageReport("t")
    _ingest(con, dump_dir, report)
    config = FilterConfig()
    counts = curate.apply_filters(con, config, report)
    assert counts == {"facts_shorter_than_50": 5, "simplified_procedure:简易程序": 5}
    relaxed = FilterConfig(name="relaxed", min_facts_chars=10, exclude_simplified=())
    curate.apply_filters(con, relaxed, report)
    curate.apply_filters(con, relaxed, report)  # re-running replaces, never duplicates
    rows = con.execute("SELECT filter_config, kept, count(*) FROM curated.cn_filter_decisions GROUP BY ALL ORDER BY 1").fetchall()
    assert rows == [(config.key, False, 5), (relaxed.key, True, 5)]
    name = curate.select(con, relaxed, "tfidf-char", n=3, k=2, seed=7, report=report)
    picks = con.execute("SELECT doc_id, cluster FROM curated.cn_representatives WHERE selection = ? ORDER BY doc_id",
                        [name]).fetchall()
    assert len(picks) == 3 and {c for _, c in picks} == {0, 1}
    curate.select(con, relaxed, "tfidf-char", n=3, k=2, seed=7, report=report)
    assert con.execute("SELECT doc_id, cluster FROM curated.cn_representatives WHERE selection = ? ORDER BY doc_id",
                       [name]).fetchall() == picks
    con.close()


def test_filter_reasons_and_config_file(tmp_path):
    doc = {"facts": "经审理查明" + "事" * 60, "simplified": "速裁", "complete": False, "claims": "诉称", "defense": None}
    assert filter_reasons(doc, FilterConfig()) == ["simplified_procedure:速裁", "broken_structure", "no_defense"]
    path = tmp_path / "filters.json"
    path.write_text(json.dumps({"name": "civil", "case_types": ["民事"], "require_defense": False}))
    config = load_filter_config(path)
    assert config.case_types == ("民事",) and config.key.startswith("civil:")
    path.write_text(json.dumps({"min_fact_chars": 10}))
    with pytest.raises(ValueError, match="min_fact_chars"):
        load_filter_config(path)


def test_quotas_spread_evenly_within_cluster_sizes():
    assert quotas([10, 10, 10], 7) == [3, 2, 2]
    assert quotas([1, 10, 2], 9) == [1, 6, 2]
    assert quotas([2, 2], 9) == [2, 2]


def test_selection_is_seeded_and_reproducible():
    rng = np.random.default_rng(0)
    vectors = np.vstack([rng.normal(c, 0.1, size=(6, 4)) for c in (0, 5, 10)])
    ids = [f"d{i:02d}" for i in range(18)]
    first = select_representatives(ids, vectors, n=6, k=3, seed=1)
    assert first == select_representatives(ids, vectors, n=6, k=3, seed=1)
    assert sorted(p.cluster for p in first) == [0, 0, 1, 1, 2, 2]
    assert all(p.cluster_size == 6 for p in first)


def test_sentence_transformers_needs_a_local_model_folder(tmp_path):
    with pytest.raises(EmbedderError, match="sentence-transformers:.*no model folder"):
        embed(["文本"], f"sentence-transformers:{tmp_path / 'missing'}")
    with pytest.raises(EmbedderError, match="tfidf-char"):
        embed(["文本"], "bge")


def test_cli_needs_a_dump_folder_or_doc_ids(capsys):
    from caseforge.cli import main

    assert main(["ingest", "cn"]) == 2          # a usage error, not a run that failed
    assert "cn: --from-dir DIR is required" in capsys.readouterr().err
