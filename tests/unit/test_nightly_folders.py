"""The nightly's folders belong to its warehouse (two warehouses in one folder keep their run folders and
releases apart), and `--from-samples` with a samples folder that does not exist fails and names it
instead of skipping every source and exiting 0."""
from __future__ import annotations

import json

import pytest

from caseforge.flows import nightly_runner, registry
from caseforge.settings import load_settings
from caseforge.warehouse.connection import connect

from registry_doubles import ReleaseDouble


def nightly_on(settings, label: str, written: list):
    """One nightly with no source and one release of curated.alpha (a row saying which warehouse it is)."""
    con = connect(settings.db_path)
    con.execute("CREATE TABLE IF NOT EXISTS curated.alpha (id INTEGER PRIMARY KEY, label VARCHAR)")
    con.execute("INSERT OR REPLACE INTO curated.alpha VALUES (1, ?)", [label])
    con.close()

    def write(con, folder):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "label.txt").write_text(label)
        written.append(folder)

    releases = {"alpha": ReleaseDouble("alpha", "alpha (double)", None, inputs=("curated.alpha",), writer=write)}
    return nightly_runner.run_nightly(settings, None, sources={}, builders={}, evaluations={}, releases=releases, plots={})


def test_two_warehouses_in_one_folder_keep_their_run_folders_and_releases(tmp_path):
    a, b = load_settings(tmp_path / "a.duckdb"), load_settings(tmp_path / "b.duckdb")
    written_a, written_b = [], []
    first = nightly_on(a, "warehouse a", written_a)
    second = nightly_on(b, "warehouse b", written_b)
    assert first.run_id == second.run_id == 1                      # each warehouse counts its own runs
    assert first.run_dir == a.runs_dir / "nightly-1" and second.run_dir == b.runs_dir / "nightly-1"
    assert first.run_dir != second.run_dir
    assert json.loads((first.run_dir / "summary.json").read_text())["stages"][0]["name"] == "alpha"
    assert written_a == [a.release_dir / "alpha"] and written_b == [b.release_dir / "alpha"]
    assert (a.release_dir / "alpha" / "label.txt").read_text() == "warehouse a"
    assert (b.release_dir / "alpha" / "label.txt").read_text() == "warehouse b"


def test_from_samples_with_a_missing_samples_folder_fails_and_names_it(tmp_path):
    settings = load_settings(tmp_path / "cf.duckdb")
    missing = tmp_path / "no-such-samples"
    sources = {name: source for name, source in registry.SOURCES.items()}
    with pytest.raises(FileNotFoundError) as caught:
        nightly_runner.run_nightly(settings, nightly_runner.NightlyOptions(from_samples=True, samples_dir=missing),
                            sources=sources, builders={}, releases={}, plots={})
    assert str(missing) in str(caught.value)
    assert "CASEFORGE_SAMPLES" in str(caught.value)
