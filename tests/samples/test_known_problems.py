"""A known problem is known (issue 36): a payload with a bad record is recorded as loaded together with what it
quarantined, so the same ingest again, nothing changed, parses nothing, quarantines nothing again, succeeds, and
says which known problems remain (how many, since which run). --reparse, a new parser version and a changed
expectation suite try them again without adding a quarantine row twice; a rejected batch fails every time."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from caseforge import gate
from caseforge.settings import Settings
from caseforge.stage_report import known_problems_of
from caseforge.tasks.barexam import ingest as barexam
from caseforge.tasks.cn import ingest as cn
from caseforge.tasks.guides import ingest as guides
from caseforge.tasks.hudoc import ingest as hudoc
from caseforge.tasks.oyez import ingest as oyez
from warehouse_rows import rows as _table

pytestmark = pytest.mark.samples

QUARANTINE = "SELECT table_name, source_key, stage, reason, raw_sha256, run_id FROM ops.quarantine ORDER BY ALL"


def cn_dumps(samples_dir: Path, folder: Path, per_file: int = 20) -> None:
    """Two dump files of real judgments (JuDGE full texts, each its own id); the second holds one judgment whose
    case number says 1937 (case_year outside the gate's range) and one line that is not JSON."""
    lines = (samples_dir / "cn" / "judge_criminal.jsonl").read_text(encoding="utf-8").splitlines()
    texts = [json.loads(line)["fd"] for line in lines[:2 * per_file]]
    folder.mkdir(parents=True, exist_ok=True)
    for n, start in enumerate((0, per_file)):
        records = [{"doc_id": f"known-{i:04d}", "full_text": texts[i]} for i in range(start, start + per_file)]
        if n == 1:
            records[3]["full_text"] = re.sub(r"（\d{4}）", "（1937）", records[3]["full_text"], count=1)
        body = [json.dumps(r, ensure_ascii=False) for r in records]
        if n == 1:
            body.insert(7, '{"doc_id": "cut in the mid')
        (folder / f"dump-{n}.jsonl").write_text("\n".join(body) + "\n", encoding="utf-8")


def twice(refresh, db_path: Path, **kwargs):
    """The same ingest twice; (first report, its quarantine rows, second report, the quarantine rows after)."""
    first = refresh(Settings(db_path=db_path), **kwargs)
    quarantined = _table(db_path, QUARANTINE)
    again = refresh(Settings(db_path=db_path), **kwargs)
    return first, quarantined, again, _table(db_path, QUARANTINE)


def assert_known_the_second_time(first, quarantined, again, after, records: int) -> None:
    assert first.status == "quarantined" and first.counts["quarantined"] == records, (first.counts, first.failures)
    assert again.status == "succeeded" and again.ok, (again.counts, again.failures)
    assert again.failures == []
    assert again.counts["payloads_parsed"] == 0, again.counts
    assert again.counts.get("quarantined", 0) == 0, again.counts
    assert after == quarantined, "the second ingest quarantined the same records again"
    assert again.counts["known_problems"] == records, again.counts
    assert again.counts["known_problems_since_run"] == first.run_id, again.counts
    assert known_problems_of(again.counts).startswith(f"known problems: {records} record"), again.counts


def test_cn_the_issues_case_a_dump_with_a_bad_record_is_not_parsed_again(samples_dir, tmp_path, db_path):
    cn_dumps(samples_dir, tmp_path / "dumps")
    first, quarantined, again, after = twice(cn.refresh, db_path, from_dir=str(tmp_path / "dumps"))
    assert sorted(row[2] for row in quarantined) == ["gate", "parse"], quarantined
    assert [row[1] for row in quarantined if row[2] == "gate"] == ["known-0023"]
    assert_known_the_second_time(first, quarantined, again, after, records=2)
    assert again.counts["known_problem_payloads"] == 1 and again.counts["payloads_unchanged"] == 2, again.counts
    assert _table(db_path, "SELECT count(*) FROM curated.cn_judgments") == [(39,)]
    assert _table(db_path, "SELECT status FROM ops.runs ORDER BY run_id") == [("quarantined",), ("succeeded",)]


def case_years_from(monkeypatch, year: int) -> None:
    """The gate's cn_judgments suite with case_year allowed from `year` on (a changed suite)."""
    real = gate.load_suite_json

    def changed(table):
        suite = real(table)
        if table == cn.TABLE:
            for expectation in suite["expectations"]:
                if expectation["kwargs"].get("column") == "case_year":
                    expectation["kwargs"]["min_value"] = year
        return suite

    monkeypatch.setattr(gate, "load_suite_json", changed)


def test_reparse_and_a_changed_suite_try_known_problems_again_without_a_second_row(samples_dir, tmp_path, db_path,
                                                                                   monkeypatch):
    folder = tmp_path / "dumps"
    cn_dumps(samples_dir, folder)
    first = cn.refresh(Settings(db_path=db_path), from_dir=str(folder))
    quarantined = _table(db_path, QUARANTINE)

    forced = cn.refresh(Settings(db_path=db_path), from_dir=str(folder), reparse=True)
    assert forced.counts["payloads_parsed"] == 2 and forced.ok, (forced.counts, forced.failures)
    assert forced.counts["known_problems"] == 2 and forced.counts["known_problems_since_run"] == first.run_id
    assert forced.counts["known_problem_payloads"] == 1, forced.counts
    assert _table(db_path, QUARANTINE) == quarantined, "--reparse added a quarantine row twice"

    # a changed suite (here: another case_year range) tries the dump holding the known problem again, not the other
    case_years_from(monkeypatch, 1900)
    changed = cn.refresh(Settings(db_path=db_path), from_dir=str(folder))
    assert changed.counts["payloads_parsed"] == 1 and changed.counts["payloads_unchanged"] == 1, changed.counts
    assert changed.ok, changed.failures                     # the judgment of 1937 lands now; the broken line is known
    assert changed.counts["known_problems"] == 1, changed.counts
    assert _table(db_path, "SELECT count(*) FROM curated.cn_judgments WHERE case_year = 1937") == [(1,)]
    assert _table(db_path, QUARANTINE) == quarantined
    settled = cn.refresh(Settings(db_path=db_path), from_dir=str(folder))
    assert settled.counts["payloads_parsed"] == 0 and settled.counts["known_problems"] == 1, settled.counts

    # a suite change that refuses the record for another reason: a new problem, quarantined and failed
    case_years_from(monkeypatch, 1950)
    stricter = cn.refresh(Settings(db_path=db_path), from_dir=str(folder))
    assert stricter.status == "quarantined" and stricter.counts["quarantined"] == 1, stricter.counts
    assert len(_table(db_path, QUARANTINE)) == len(quarantined) + 1


def test_a_new_parser_version_tries_known_problems_again(samples_dir, tmp_path, db_path, monkeypatch):
    folder = tmp_path / "dumps"
    cn_dumps(samples_dir, folder)
    cn.refresh(Settings(db_path=db_path), from_dir=str(folder))
    quarantined = _table(db_path, QUARANTINE)
    monkeypatch.setattr(cn, "PARSER", cn.PARSER + "-next")
    next_version = cn.refresh(Settings(db_path=db_path), from_dir=str(folder))
    assert next_version.counts["payloads_parsed"] == 2 and next_version.ok, next_version.counts
    assert next_version.counts["known_problems"] == 2
    assert _table(db_path, QUARANTINE) == quarantined


def test_a_rejected_batch_fails_every_time(samples_dir, tmp_path, db_path, monkeypatch):
    folder = tmp_path / "dumps"
    cn_dumps(samples_dir, folder)
    real = gate.load_suite_json

    def rejecting(table):
        suite = real(table)
        if table == cn.TABLE:
            suite["expectations"].append({"type": "expect_table_row_count_to_be_between",
                                          "kwargs": {"min_value": 1000}})
        return suite

    monkeypatch.setattr(gate, "load_suite_json", rejecting)
    first = cn.refresh(Settings(db_path=db_path), from_dir=str(folder))
    quarantined = _table(db_path, QUARANTINE)
    again = cn.refresh(Settings(db_path=db_path), from_dir=str(folder))
    for report in (first, again):
        assert report.status == "quarantined" and report.counts["payloads_parsed"] == 2, report.counts
        assert any("rejected" in line for line in report.failures), report.failures
    assert _table(db_path, "SELECT count(*) FROM curated.cn_judgments") == [(0,)]
    assert _table(db_path, QUARANTINE) == quarantined, "the rejected rows were quarantined twice"


# ---- every source with a bad-input sample: the same ingest again is a no-op that names its known problems ----

def test_oyez_case_files_with_wrongly_typed_fields(samples_dir, tmp_path, db_path):
    import test_oyez_bad_input as bad

    files = bad._case_files(samples_dir)
    folder = tmp_path / "cases"
    folder.mkdir()
    for path in files[:bad.GOOD]:
        (folder / path.name).symlink_to(path)
    for field, path in zip(bad.WRONG_TYPES, files[bad.GOOD:]):
        (folder / f"bad_{field}.{path.name}").write_bytes(bad._mutated(path, field))
    first, quarantined, again, after = twice(oyez.refresh, db_path, from_dir=str(folder))
    assert_known_the_second_time(first, quarantined, again, after, records=len(bad.WRONG_TYPES))


def test_oyez_a_case_the_gate_quarantines(samples_dir, tmp_path, db_path):
    folder = tmp_path / "cases"
    folder.mkdir()
    for name in ("2015.14-1382.json", "2015.14-181.json"):
        shutil.copy(samples_dir / "oyez" / "cases" / name, folder / name)
    data = json.loads((folder / "2015.14-181.json").read_text())
    data["name"] = None                                   # the gate quarantines a case without a name
    (folder / "2015.14-181.json").write_text(json.dumps(data))
    first, quarantined, again, after = twice(oyez.refresh, db_path, from_dir=str(folder))
    assert [row[2] for row in quarantined] == ["gate"]
    assert_known_the_second_time(first, quarantined, again, after, records=1)


@pytest.mark.parametrize("with_metadata", [True, False])
def test_hudoc_bodies_cut_short_or_unreadable(samples_dir, tmp_path, db_path, with_metadata):
    import test_hudoc_bad_input as bad

    folder = bad._folder(samples_dir, tmp_path, {"html/001-192224.html": bad._truncated_garbled(samples_dir),
                                                 "docx/001-999999.docx": bad._docx_without_body()})
    if with_metadata:
        bad._known(db_path, list(bad.BODIES) + ["001-192224", "001-999999"])
    first, quarantined, again, after = twice(hudoc.refresh, db_path, from_dir=str(folder))
    if with_metadata:
        assert_known_the_second_time(first, quarantined, again, after, records=2)
        return
    # a body found cut short without its metadata row is judged as a judgment, provisionally: it is read again
    # (its metadata may come and say it is a decision), and its problem is still known, not quarantined again
    assert again.ok and again.counts["payloads_parsed"] == 1, (again.counts, again.failures)
    assert again.counts["known_problems"] == 2 and after == quarantined, again.counts


def test_hudoc_a_malformed_metadata_record(samples_dir, tmp_path, db_path):
    folder = tmp_path / "hudoc"
    shutil.copytree(samples_dir / "hudoc" / "metadata", folder / "metadata")
    path = folder / "metadata" / "RECONSTRUCTED_query_results_page_from_echrod_columns.json"
    page = json.loads(path.read_bytes())
    page["results"][0]["columns"].update({"kpdate": "2023-13-45T00:00:00", "doctype": "HEJUD",
                                          "languageisocode": "ENG"})
    path.write_text(json.dumps(page), encoding="utf-8")
    first, quarantined, again, after = twice(hudoc.refresh, db_path, from_dir=str(folder))
    assert [row[2] for row in quarantined] == ["parse"], quarantined
    assert_known_the_second_time(first, quarantined, again, after, records=1)


def test_guides_an_unreadable_guide(samples_dir, tmp_path, db_path):
    folder = tmp_path / "guides"
    folder.mkdir()
    (folder / "guide_art_2_pages.csv").symlink_to(samples_dir / "echr_guides" / "guide_art_2_pages_first.csv")
    (folder / "guide_art_9_eng.pdf").write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 50)
    (folder / "guide_art_8_pages.csv").write_bytes(b"page_number,citations,page_text\nx,{},text\n")
    first, quarantined, again, after = twice(guides.refresh, db_path, from_dir=str(folder))
    assert_known_the_second_time(first, quarantined, again, after, records=2)


def test_barexam_bad_lines(samples_dir, tmp_path, db_path):
    import test_barexam_bad_input as bad

    folder = tmp_path / "barexam"
    folder.mkdir()
    lines = bad._passage_lines(samples_dir)
    (folder / "passages_mbe_gold.jsonl").write_bytes(b"\n".join(lines[:10] + [bad.BAD_PASSAGE_LINES[0][0]] + lines[10:]))
    records = bad._question_records(samples_dir)
    (folder / "barexam_qa.csv").write_bytes(bad._csv(records[:11]) + b"mbe_bad,too,few\n" + bad._csv(records[11:]))
    first, quarantined, again, after = twice(barexam.refresh, db_path, from_dir=str(folder))
    assert_known_the_second_time(first, quarantined, again, after, records=2)


# ---- the nightly on samples, and `caseforge status` ----

@pytest.mark.slow
def test_a_night_with_only_known_problems_is_green_and_its_summary_and_status_name_them(samples_dir, tmp_path,
                                                                                         capsys):
    from oyez_subset import link_oyez_subset
    from prefect.client.orchestration import get_client

    from caseforge import cli
    from caseforge.flows import nightly_runner, registry

    root = link_oyez_subset(samples_dir, tmp_path / "samples", 5, 20)
    bad = sorted((samples_dir / "oyez" / "cases").glob("*.json"))[5]
    data = json.loads(bad.read_bytes())
    data["name"] = None                                   # the gate quarantines a case without a name
    (root / "oyez" / "cases" / bad.name).write_text(json.dumps(data))
    cn_dumps(samples_dir, root / "cn")
    stages_of = {"sources": {name: registry.SOURCES[name] for name in ("oyez", "cn")},
                 "builders": {}, "evaluations": {}, "releases": {}}
    settings = Settings(db_path=tmp_path / "cf.duckdb")
    options = nightly_runner.NightlyOptions(from_samples=True, samples_dir=root, release_dir=tmp_path / "releases")
    with get_client(sync_client=True) as client:       # Prefect's temporary server up before the source threads
        client.api_healthcheck()

    first = nightly_runner.run_nightly(settings, options, **stages_of)
    assert not first.ok and len(first.failures()) == 3, first.failures()
    quarantined = _table(settings.db_path, QUARANTINE)

    second = nightly_runner.run_nightly(settings, options, **stages_of)
    assert second.ok, second.failures()
    sources = {o.name: o for o in second.outcomes if o.stage == "source"}
    assert sources["oyez"].counts["payloads_parsed"] == 0 and sources["cn"].counts["payloads_parsed"] == 0
    assert (sources["oyez"].counts["known_problems"], sources["cn"].counts["known_problems"]) == (1, 2)
    assert _table(settings.db_path, QUARANTINE) == quarantined
    summary = (second.run_dir / "summary.md").read_text()
    assert summary.startswith(f"# Nightly run {second.run_id}: all stages ok"), summary[:200]
    assert "## Known problems" in summary
    assert "source oyez: known problems: 1 record in 1 payload, since run" in summary, summary
    assert "source cn: known problems: 2 records in 1 payload, since run" in summary, summary

    assert cli.main(["status", "--db", str(settings.db_path)]) == 0
    out = capsys.readouterr().out
    assert "cn: known problems: 2 records in 1 payload, since run" in out, out
    assert "oyez: known problems: 1 record in 1 payload, since run" in out, out


def test_a_raised_limit_tries_a_refused_payload_again(samples_dir, tmp_path, db_path, monkeypatch):
    import test_hudoc_bad_input as bad

    folder = bad._folder(samples_dir, tmp_path)
    bad._known(db_path, list(bad.BODIES))
    monkeypatch.setenv("CASEFORGE_MAX_ELEMENTS_HUDOC_BODY", "10")
    first, quarantined, again, after = twice(hudoc.refresh, db_path, from_dir=str(folder))
    assert all("over the hudoc body limit" in row[3] for row in quarantined) and len(quarantined) == 3, quarantined
    assert_known_the_second_time(first, quarantined, again, after, records=3)

    monkeypatch.delenv("CASEFORGE_MAX_ELEMENTS_HUDOC_BODY")
    raised = hudoc.refresh(Settings(db_path=db_path), from_dir=str(folder))
    assert raised.ok and raised.counts["payloads_parsed"] == 3, (raised.counts, raised.failures)
    assert _table(db_path, "SELECT count(*) FROM curated.echr_paragraphs") == [(bad.PARAGRAPHS,)]
