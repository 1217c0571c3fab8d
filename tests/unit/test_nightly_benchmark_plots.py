"""The nightly's benchmark plots on a small warehouse: CaseFacts label distribution, claim-pair similarity
with the calibrated windows, lengths by label; AQuAECHR and CaseGen judge-score distributions. Each is a
PNG, the same bytes for the same data, absent (None) when its tables are; the summary embeds them and
links the release folders, the quality results and the run folder."""
from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from caseforge.evalstore import ItemResult, save_run
from caseforge.flows import nightly_report, nightly_runner, registry
from caseforge.settings import load_settings
from caseforge.warehouse.connection import connect

PNG = b"\x89PNG\r\n\x1a\n"
BENCHMARK_PLOTS = ["casefacts_labels", "casefacts_similarity", "casefacts_lengths", "aquaechr_judge_scores",
                   "casegen_judge_scores"]


def _fill(con) -> None:
    claims = [(f"c{i}", f"f{i}", " ".join(["word"] * (5 + i % 7)), ("SUPPORTED", "REFUTED", "OVERRULED")[i % 3])
              for i in range(24)]
    con.executemany("INSERT INTO curated.casefacts_claims VALUES (?, ?, ?, ?, '[]', '[]', 'test')", claims)
    samples = [(f"{kind}:{i}", kind, f"c{i}", f"c{i + 1}", round(0.3 + 0.02 * i, 3), i // 5, 10, i > 20, "judged")
               for kind in ("contradiction", "overlap") for i in range(30)]
    con.executemany("INSERT INTO build.casefacts_calibration_samples VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", samples)
    con.executemany("INSERT INTO build.casefacts_windows VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [("contradiction", 0.62, 0.88, 5, 30, 0.95, "calibrated"),
                     ("overlap", 0.7, 1.0, 4, 30, 0.95, "calibrated")])
    for i in range(12):
        con.execute("INSERT INTO curated.aquaechr_qa (qa_id, guide_id, window_id, strategy, comprehensiveness, "
                    "conciseness, fluency, kept, updated_at) VALUES (?, 'g', 'w', 'i', ?, ?, ?, true, now())",
                    [f"q{i}", 1 + i % 5, 1 + (i * 2) % 5, 5 - i % 3])
    items = [ItemResult(f"item{i}", "defense", {}, {}, {"judge_factuality": 1 + i % 10, "judge_clarity": 10 - i % 4,
                                                        "rouge_l": 0.5}) for i in range(15)]
    save_run(con, "run-a", "casegen", "model-x", "curated.casegen_items", "sha", {}, items, {"n": 15.0},
             datetime(2026, 1, 1, tzinfo=timezone.utc))


@pytest.fixture
def warehouse(tmp_path):
    con = connect(tmp_path / "cf.duckdb")
    yield con
    con.close()


def test_each_benchmark_plot_is_a_deterministic_png(warehouse):
    _fill(warehouse)
    for name in BENCHMARK_PLOTS:
        made = nightly_report.PLOTS[name](warehouse)
        assert made is not None, name
        title, png = made
        assert png.startswith(PNG) and len(png) > 5000, name
        assert nightly_report.PLOTS[name](warehouse) == (title, png), f"{name}: not the same bytes twice"
    assert "model-x" in nightly_report.plot_casegen_judge_scores(warehouse)[0]


def test_the_similarity_plot_marks_the_windows(warehouse):
    _fill(warehouse)
    _, with_windows = nightly_report.plot_casefacts_similarity(warehouse)
    warehouse.execute("DELETE FROM build.casefacts_windows")
    _, without = nightly_report.plot_casefacts_similarity(warehouse)
    assert with_windows != without


def test_no_plot_without_its_data(warehouse):
    for name in BENCHMARK_PLOTS:
        assert nightly_report.PLOTS[name](warehouse) is None, name


def test_the_summary_embeds_every_plot_and_says_where_things_are(tmp_path):
    settings = load_settings(tmp_path / "cf.duckdb")
    with connect(settings.db_path) as con:
        _fill(con)
    (tmp_path / "releases" / "casefacts").mkdir(parents=True)
    result = nightly_runner.run_nightly(settings, nightly_runner.NightlyOptions(release_dir=tmp_path / "releases", sources=[]),
                                 sources={}, builders={}, evaluations={}, releases={"casefacts": registry.Release(
                                     "casefacts", "skipped: its input is missing", lambda: None,
                                     inputs=("curated.not_here",))})
    summary = (result.run_dir / "summary.md").read_text()
    for name in BENCHMARK_PLOTS:
        assert f"({name}.png)" in summary, name
        assert (result.run_dir / f"{name}.png").read_bytes().startswith(PNG)
    # paths to copy, at the places docs/configuration.md names: no file:// link a browser refuses, and the mirror's
    # own path, not the generation folder its link points at tonight (issue 45)
    assert "## Where things are" in summary and "file://" not in summary
    assert f"`{(tmp_path / 'releases' / 'casefacts').absolute()}`" in summary
    assert f"`{settings.parquet_dir.absolute() / 'ops' / 'quality_results.parquet'}`" in summary
    assert "-parquet.d/" not in summary and f"`{result.run_dir.absolute()}`" in summary
    assert json.loads((result.run_dir / "summary.json").read_text())["run_id"] == result.run_id
