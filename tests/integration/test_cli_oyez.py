"""The CLI runs the real Prefect flow on the recorded samples (commands sharing one local server, as a user's do)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.samples, pytest.mark.slow]


@pytest.fixture
def caseforge(shared_server_cli_env):
    def run(*args, timeout=240):
        return subprocess.run([sys.executable, "-m", "caseforge", *args], capture_output=True, text=True,
                              timeout=timeout, env=shared_server_cli_env)
    return run


def test_ingest_then_sql_and_quality(caseforge, samples_dir, tmp_path):
    db = tmp_path / "cf.duckdb"
    oyez = samples_dir / "oyez"
    done = caseforge("ingest", "oyez", "--from-dir", str(oyez / "cases"), "--legacy-table",
                     str(oyez / "legacy_justice_table.csv"), "--db", str(db))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "new=238" in done.stdout and "quarantined=0" in done.stdout

    query = caseforge("sql", "SELECT name, decided_date, disposition FROM curated.scotus_cases "
                      "WHERE case_id = 50606", "--format", "json", "--db", str(db))
    assert query.returncode == 0, query.stderr
    assert json.loads(query.stdout) == [{"name": "Roe v. Wade", "decided_date": "1973-01-22",
                                         "disposition": "reversed"}]

    write = caseforge("sql", "DELETE FROM curated.scotus_cases", "--db", str(db))
    assert write.returncode != 0 and "read-only" in write.stderr.lower()

    quality = caseforge("quality", "--format", "csv", "--db", str(db))
    assert quality.returncode == 0
    assert "scotus_cases" in quality.stdout and "scotus_legacy" in quality.stdout
    assert Path(db.parent / "cf-parquet" / "scotus_cases.parquet").exists()     # the mirror keyed to cf.duckdb


def test_quarantine_gives_nonzero_exit_with_one_line_reasons(caseforge, tmp_path):
    folder = tmp_path / "cases"
    folder.mkdir()
    (folder / "bad.json").write_text('{"ID": 1, "name": "Trunc')
    (folder / "ok.json").write_text(json.dumps({"ID": 2, "name": "A v. B", "term": "1999",
                                                "href": "https://api.oyez.org/cases/1999/1-1"}))
    done = caseforge("ingest", "oyez", "--from-dir", str(folder), "--db", str(tmp_path / "cf.duckdb"))
    assert done.returncode == 1
    reasons = [line for line in done.stderr.splitlines() if line.startswith("caseforge: ")]
    assert len(reasons) == 1, done.stderr[-3000:]
    assert reasons[0].startswith("caseforge: oyez file/bad.json: invalid or truncated JSON")
    assert "new=1" in done.stdout


def test_a_wrongly_typed_case_among_good_ones_lands_the_others_and_exits_non_zero_naming_the_file(caseforge, samples_dir,
                                                                                                   tmp_path):
    folder = tmp_path / "cases"
    folder.mkdir()
    files = sorted((samples_dir / "oyez" / "cases").glob("*.json"))
    for path in files[:10]:
        (folder / path.name).symlink_to(path)
    bad = json.loads(files[10].read_text())
    bad["citation"] = 5
    (folder / "bad_citation.json").write_text(json.dumps(bad))
    done = caseforge("ingest", "oyez", "--from-dir", str(folder), "--db", str(tmp_path / "cf.duckdb"))
    assert done.returncode == 1
    assert "new=10" in done.stdout and "quarantined=1" in done.stdout
    reasons = [line for line in done.stderr.splitlines() if line.startswith("caseforge: ")]
    assert reasons == [f"caseforge: oyez {bad['href'].split('/cases/')[1]} (file bad_citation.json): citation: expected "
                       "an object {volume, page, year}, got a number 5"], done.stderr[-3000:]
