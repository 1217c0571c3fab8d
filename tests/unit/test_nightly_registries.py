"""The nightly's plumbing with test-double sources and builders: parallel sources on one database,
failures isolated, builders and exports gated by input fingerprints, summary, status."""
import json
import threading

import pytest


from caseforge.cli.status import status_data
from caseforge.fingerprints import inputs_fingerprint, table_fingerprint
from caseforge.flows import nightly_runner, registry
from caseforge.settings import load_settings
from caseforge.stage_report import StageReport
from caseforge.warehouse.connection import connect

from registry_doubles import BuilderDouble as BuilderEntryDouble, ReleaseDouble, SourceDouble


def source(name, refresh, samples=None):
    return SourceDouble(name, f"{name} (double)", None, archive_source=name, samples=samples, refresh=refresh)


def builder_entry(name, inputs, run):
    return BuilderEntryDouble(name, f"{name} (double)", None, inputs=inputs, nightly=True, builder=run)


def make_source_double(table, rows, barrier=None):
    """Test double of a source refresh: archives one payload and upserts rows into curated.<table>."""

    def refresh(settings, **kwargs):
        from caseforge.archive import RawArchive

        if barrier is not None:
            barrier.wait(timeout=10)  # both sources are inside refresh at once: they really run in parallel
        con = connect(settings.db_path)
        try:
            report = StageReport(name=table)
            _, is_new = RawArchive(con).store(table, "list", json.dumps(rows).encode())
            con.execute(f"CREATE TABLE IF NOT EXISTS curated.{table} (id INTEGER PRIMARY KEY, label VARCHAR)")
            before = con.execute(f"SELECT count(*) FROM curated.{table}").fetchone()[0]
            con.executemany(f"INSERT OR REPLACE INTO curated.{table} VALUES (?, ?)", rows)
            after = con.execute(f"SELECT count(*) FROM curated.{table}").fetchone()[0]
            report.add("fetched", 1 if is_new else 0)
            report.add("new", after - before)
            report.add("changed", 0)
            return report
        finally:
            con.close()

    return refresh


def failing_source(settings, **kwargs):
    raise ConnectionError("upstream said 503 five times")


class BuilderDouble:
    """Test double of a builder: records each call and reports one LLM call per input row."""

    def __init__(self, table):
        self.table = table
        self.calls = 0

    def __call__(self, settings, **options):
        self.calls += 1
        con = connect(settings.db_path)
        try:
            n = con.execute(f"SELECT count(*) FROM curated.{self.table}").fetchone()[0]
        finally:
            con.close()
        report = StageReport(name="double")
        report.add("cache_hits", 0)
        report.add("items", n)
        return report


@pytest.fixture
def registries():
    barrier = threading.Barrier(2)
    alpha_rows = [[1, "a"], [2, "b"]]
    sources = {"alpha": source("alpha", make_source_double("alpha", alpha_rows, barrier)),
               "beta": source("beta", make_source_double("beta", [[7, "x"]], barrier))}
    builder = BuilderDouble("alpha")
    builders = {"counter": builder_entry("counter", ("curated.alpha",), builder),
                "needs_missing": builder_entry("needs_missing", ("curated.not_built_yet",), BuilderDouble("alpha"))}
    written = []

    def export_double(con, folder):
        written.append(folder)
        folder.mkdir(parents=True, exist_ok=True)
        return None

    releases = {"alpha": ReleaseDouble("alpha", "alpha (double)", None, inputs=("curated.alpha",),
                                       writer=export_double)}
    return {"builder": builder, "written": written, "alpha_rows": alpha_rows,
            "kwargs": {"sources": sources, "builders": builders, "evaluations": {}, "releases": releases,
                       "plots": {}}}


def run_nightly(settings, registries, options=None):
    return nightly_runner.run_nightly(settings, options, **registries["kwargs"])


def by_name(result):
    return {(o.stage, o.name): o for o in result.outcomes}


def test_sources_in_parallel_then_builder_and_export_only_when_inputs_change(registries, tmp_path):
    settings = load_settings(tmp_path / "cf.duckdb")
    first = run_nightly(settings, registries)
    stages = by_name(first)
    assert first.ok, first.failures()
    assert stages[("source", "alpha")].counts["new"] == 2
    assert stages[("source", "alpha")].counts["new_payloads"] == 1
    assert stages[("source", "beta")].counts["new"] == 1
    assert stages[("builder", "counter")].status == "succeeded"
    assert stages[("builder", "needs_missing")].status == "skipped"
    assert stages[("builder", "needs_missing")].note == "input missing: curated.not_built_yet"
    assert stages[("export", "alpha")].status == "succeeded"
    assert registries["builder"].calls == 1 and len(registries["written"]) == 1

    second = run_nightly(settings, registries)
    stages = by_name(second)
    assert stages[("source", "alpha")].counts["new_payloads"] == 0
    assert stages[("builder", "counter")].status == "skipped"
    assert stages[("builder", "counter")].note == "inputs unchanged"
    assert stages[("export", "alpha")].status == "skipped"
    assert registries["builder"].calls == 1 and len(registries["written"]) == 1

    registries["alpha_rows"][1][1] = "changed label"  # upstream changed one row
    third = run_nightly(settings, registries)
    assert by_name(third)[("builder", "counter")].status == "succeeded"
    assert registries["builder"].calls == 2 and len(registries["written"]) == 2

    summary = json.loads((third.run_dir / "summary.json").read_text())
    assert summary["ok"] and summary["run_id"] == third.run_id
    assert "| source | alpha | succeeded |" in (third.run_dir / "summary.md").read_text()


def test_one_failing_source_does_not_stop_the_others_and_the_run_fails(registries, tmp_path):
    registries["kwargs"]["sources"]["broken"] = source("broken", failing_source)
    settings = load_settings(tmp_path / "cf.duckdb")
    result = run_nightly(settings, registries)
    stages = by_name(result)
    assert not result.ok
    assert result.failures() == ["source broken: ConnectionError: upstream said 503 five times"]
    assert stages[("source", "alpha")].status == "succeeded" and stages[("source", "beta")].status == "succeeded"
    assert stages[("builder", "counter")].status == "succeeded"

    con = connect(settings.db_path)
    try:
        data = status_data(con, limit=5)
    finally:
        con.close()
    nightly_run = data["runs"][0]
    assert nightly_run["kind"] == "nightly" and nightly_run["status"] == "failed"
    assert nightly_run["stages_failed"] == 1
    assert "broken" in nightly_run["message"]
    statuses = {(s["stage"], s["name"]): s["status"] for s in data["last_nightly_stages"]}
    assert statuses[("source", "broken")] == "failed" and statuses[("source", "alpha")] == "succeeded"


def test_fingerprint_sees_every_write_and_stays_put_without_one(tmp_path):
    """A curated table's fingerprint follows its writes, not its content (issue 43: no row is read): reading it
    again gives the same one; an update, a delete, or a rewrite of the same rows gives another (a rewrite is
    taken for a change, never the reverse). A table outside curated is still fingerprinted by its content."""
    con = connect(tmp_path / "cf.duckdb")
    con.execute("CREATE TABLE curated.t (id INTEGER, label VARCHAR)")
    con.execute("INSERT INTO curated.t VALUES (1, 'a'), (2, 'b')")
    first, _ = inputs_fingerprint(con, ("curated.t",))
    assert inputs_fingerprint(con, ("curated.t",))[0] == first
    con.execute("UPDATE curated.t SET label = 'c' WHERE id = 2")
    second, _ = inputs_fingerprint(con, ("curated.t",))
    assert second != first
    con.execute("DELETE FROM curated.t")
    con.execute("INSERT INTO curated.t VALUES (2, 'c'), (1, 'a')")
    assert inputs_fingerprint(con, ("curated.t",))[0] not in (first, second)
    con.execute("CREATE TABLE build.t (id INTEGER, label VARCHAR)")
    con.execute("INSERT INTO build.t VALUES (1, 'a'), (2, 'b')")
    hashed, _ = inputs_fingerprint(con, ("build.t",))
    con.execute("DELETE FROM build.t")
    con.execute("INSERT INTO build.t VALUES (2, 'b'), (1, 'a')")
    assert inputs_fingerprint(con, ("build.t",))[0] == hashed
    with pytest.raises(ValueError, match="schema.table"):
        table_fingerprint(con, "curated.t; DROP TABLE x")


def test_unknown_source_is_a_clear_error(registries, tmp_path):
    with pytest.raises(ValueError, match="unknown source"):
        run_nightly(load_settings(tmp_path / "cf.duckdb"), registries, nightly_runner.NightlyOptions(sources=["nope"]))


def test_from_samples_skips_sources_without_a_mapping(registries, tmp_path):
    result = run_nightly(load_settings(tmp_path / "cf.duckdb"), registries,
                         nightly_runner.NightlyOptions(from_samples=True, samples_dir=tmp_path))
    assert {o.name: o.note for o in result.outcomes if o.stage == "source"} == {
        "alpha": "no samples for it (registry samples, or its folder is absent)",
        "beta": "no samples for it (registry samples, or its folder is absent)"}


def test_status_command_table_and_json(registries, tmp_path, capsys):
    from caseforge.cli import main

    db = tmp_path / "cf.duckdb"
    result = run_nightly(load_settings(db), registries)
    capsys.readouterr()
    assert main(["status", "--db", str(db), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["runs"][0]["run_id"] == result.run_id and data["runs"][0]["kind"] == "nightly"
    assert {(s["stage"], s["name"], s["status"]) for s in data["last_nightly_stages"]} >= {
        ("source", "alpha", "succeeded"), ("builder", "counter", "succeeded"), ("export", "alpha", "succeeded")}
    assert main(["status", "--db", str(db)]) == 0
    table = capsys.readouterr().out
    assert "nightly" in table and "last nightly, per stage:" in table and "input missing" in table


def test_status_without_a_warehouse_is_a_clear_error(tmp_path, capsys):
    from caseforge.cli import main

    assert main(["status", "--db", str(tmp_path / "none.duckdb")]) == 2
    assert "no warehouse" in capsys.readouterr().err


def test_a_source_whose_sample_folder_is_absent_is_skipped(tmp_path):
    (tmp_path / "oyez" / "cases").mkdir(parents=True)
    (tmp_path / "oyez" / "legacy_justice_table.csv").write_text("ID,name,facts,disposition\n")
    oyez, hudoc = registry.SOURCES["oyez"], registry.SOURCES["hudoc"]
    assert nightly_runner.source_kwargs(oyez, True, tmp_path) == {
        "from_dir": str(tmp_path / "oyez" / "cases"), "legacy_table": str(tmp_path / "oyez" / "legacy_justice_table.csv")}
    assert nightly_runner.source_kwargs(hudoc, True, tmp_path) is None
    assert nightly_runner.source_kwargs(hudoc, False, tmp_path) == {}


def test_no_release_is_written_from_a_table_whose_stage_failed_tonight(registries, tmp_path):
    write_alpha = make_source_double("alpha", registries["alpha_rows"], barrier=None)

    def alpha_fails_half_way(settings, **kwargs):
        write_alpha(settings)                         # some rows landed, then the source failed
        raise ConnectionError("upstream closed the connection on page 2")

    kwargs = registries["kwargs"]
    kwargs["sources"] = {"alpha": SourceDouble("alpha", "alpha (double)", None, outputs=("curated.alpha",),
                                               archive_source="alpha", refresh=alpha_fails_half_way)}
    result = run_nightly(load_settings(tmp_path / "cf.duckdb"), registries)
    export = by_name(result)[("export", "alpha")]
    assert not result.ok and registries["written"] == []
    assert (export.status, export.note) == (
        "skipped", "held back: curated.alpha comes from source alpha, which failed tonight")


def test_a_release_with_nothing_to_release_is_skipped_and_says_why(registries, tmp_path):
    from caseforge.release import NothingToRelease

    def nothing_kept(con, folder):
        raise NothingToRelease("curated.alpha has no kept rows: 0 of 2 survived the checks")

    registries["kwargs"]["releases"] = {"alpha": ReleaseDouble("alpha", "alpha (double)", None,
                                                               inputs=("curated.alpha",), writer=nothing_kept)}
    result = run_nightly(load_settings(tmp_path / "cf.duckdb"), registries)
    export = by_name(result)[("export", "alpha")]
    assert result.ok, result.failures()
    assert (export.status, export.note) == (
        "skipped", "nothing to release: curated.alpha has no kept rows: 0 of 2 survived the checks")


def test_a_live_nightly_skips_sources_without_a_live_fetcher_and_says_how_to_load_them(registries, tmp_path):
    called = []

    def files_only(settings, **kwargs):
        called.append(kwargs)                 # a live run would call it without its files: a bind error
        raise TypeError("refresh() missing 1 required argument: 'from_dir'")

    registries["kwargs"]["sources"]["files"] = SourceDouble("files", "files (double)", None, archive_source="files",
                                                            samples={"from_dir": "files"}, live=False,
                                                            refresh=files_only)
    registries["kwargs"]["sources"].pop("beta")            # alpha alone: no partner for the parallel barrier
    registries["kwargs"]["sources"]["alpha"] = source("alpha", make_source_double("alpha", registries["alpha_rows"]))
    result = run_nightly(load_settings(tmp_path / "cf.duckdb"), registries)
    skipped = by_name(result)[("source", "files")]
    assert result.ok, result.failures()
    assert called == [] and skipped.status == "skipped"
    assert skipped.note == ("no live fetcher: load its files with `caseforge ingest files --from-dir DIR` "
                            "(or run the nightly with --from-samples)")


def test_status_stages_shows_the_last_nightly_behind_more_runs_than_the_limit(registries, tmp_path, capsys):
    """Issue 41: after ten newer runs, `status --stages` said "no nightly among the runs shown" (exit 0) and needed
    `--limit 20`, though its help promises the stages of the last nightly."""
    from caseforge.cli import main
    from caseforge.run_record import end_run, start_run

    db = tmp_path / "cf.duckdb"
    result = run_nightly(load_settings(db), registries)
    with connect(db) as con:
        for _ in range(12):
            end_run(con, start_run(con, "ingest", "alpha"), StageReport(name="ingest alpha"))
    capsys.readouterr()
    assert main(["status", "--db", str(db), "--stages", "--format", "json"]) == 0
    stages = json.loads(capsys.readouterr().out)
    assert [(s["stage"], s["name"]) for s in stages] == [(o.stage, o.name) for o in result.outcomes]
