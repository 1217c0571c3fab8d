"""The Parquet mirror published to a store ([mirror] publish; caseforge.warehouse.published) and queried from
there (`caseforge sql --mirror URL`, `status --mirror`, `quality --mirror`), against a real S3-compatible
server (SeaweedFS, tests/s3_server.py):

- a reader in another working directory, with only the read-only identity, answers from the published mirror;
- only changed files are uploaded: a publish with nothing changed writes no data object;
- a publish killed with SIGKILL midway leaves readers on the previous generation; the next one completes it;
- old generations are pruned after `keep`, never the current one nor the one before it;
- wrong credentials, a missing bucket, an unreachable endpoint: one line each naming the store; a failed
  publish is a failed run of its own (exit status 1 of the nightly, `status` shows it) and leaves the
  warehouse's data as it was."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from doc_pages import block_after

from caseforge.settings import load_settings, overriding
from caseforge.store import StoreError, open_store
from caseforge.warehouse.connection import connect
from caseforge.warehouse.mirror import export_curated_parquet
from caseforge.warehouse.published import POINTER, find_published, publish_mirror

pytestmark = pytest.mark.slow


def _fill(con, version: str, paragraphs: int = 3, itemid: str = "001-1") -> None:
    """A table mirrored whole (scotus_legacy) and one with a stamp column (echr_paragraphs, mirrored in parts)."""
    con.execute("INSERT OR REPLACE INTO curated.scotus_legacy (case_id, name, raw_sha256) VALUES (1, ?, 'x')",
                [version])
    con.execute("DELETE FROM curated.echr_paragraphs WHERE itemid = ?", [itemid])
    con.execute("INSERT INTO curated.echr_paragraphs (itemid, part, text, ordinal, raw_sha256, updated_at) "
                "SELECT ?, 'judgment', ?, i, 'sha', now() FROM range(?) t(i)", [itemid, version, paragraphs])


def _prefix(s3_server) -> str:
    return f"s3://{s3_server.bucket}/mirror-{uuid.uuid4().hex[:8]}"


def _objects(s3_server, url: str) -> dict[str, str]:
    """Every object under the store URL -> its ETag (a new write of an object changes what is listed)."""
    fs = s3_server.filesystem()
    root = url.split("://", 1)[1]
    return {info["name"][len(root) + 1:]: info.get("ETag", "") + str(info.get("LastModified"))
            for info in fs.find(root, detail=True).values()}


def _reader_env(s3_server, identity=None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CASEFORGE_"))}
    return {**env, **s3_server.env(identity or s3_server.ro)}


def _caseforge(args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "caseforge", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=180)


@pytest.fixture
def warehouse(tmp_path):
    settings = load_settings(tmp_path / "cf.duckdb")
    con = connect(settings.db_path)
    yield settings, con
    con.close()


def test_a_published_mirror_answers_sql_status_and_quality_elsewhere_with_read_only_credentials(
        warehouse, s3_env, tmp_path):
    settings, con = warehouse
    _fill(con, "v1", paragraphs=4)
    con.execute("INSERT INTO ops.runs (kind, target, started_at, status) VALUES ('ingest', 'oyez', now(), 'succeeded')")
    con.execute("INSERT INTO ops.llm_calls (identity, step, backend, model, template_id, template_sha, request, status, "
                "attempts, created_at) VALUES ('i1', 'echo', 'replay', 'm', 'echo.j2', 'sha', '{}', 'ok', 1, now())")
    export_curated_parquet(con, settings.parquet_dir)
    url = _prefix(s3_env)
    report = publish_mirror(settings.parquet_dir, open_store(url))
    assert report.generation == 1 and report.uploaded and not report.reused

    elsewhere = tmp_path / "laptop"
    elsewhere.mkdir()
    env = _reader_env(s3_env)                                       # the read-only identity, no warehouse here
    done = _caseforge(["sql", "--mirror", url, "--format", "json",
                       "SELECT itemid, text, count(*) AS n FROM curated.echr_paragraphs GROUP BY ALL"], elsewhere, env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"itemid": "001-1", "text": "v1", "n": 4}]
    assert f"generation 1" in done.stderr and url in done.stderr
    done = _caseforge(["sql", "--mirror", url, "--format", "csv", "SELECT name FROM curated.scotus_legacy"],
                      elsewhere, env)
    assert (done.returncode, done.stdout.split()) == (0, ["name", "v1"]), done.stderr
    status = _caseforge(["status", "--mirror", url, "--format", "json"], elsewhere, env)
    assert status.returncode == 0, status.stderr
    assert [(r["kind"], r["target"], r["status"]) for r in json.loads(status.stdout)["runs"]] == \
        [("ingest", "oyez", "succeeded")]
    quality = _caseforge(["quality", "--mirror", url, "--format", "csv"], elsewhere, env)
    assert quality.returncode == 0, quality.stderr
    stats = _caseforge(["llm", "stats", "--mirror", url, "--format", "json"], elsewhere, env)
    assert stats.returncode == 0, stats.stderr
    assert [row["step"] for row in json.loads(stats.stdout)] == ["echo"], stats.stdout
    assert not list(elsewhere.iterdir()), "a reader of a published mirror wrote into its working directory"

    missing = _caseforge(["sql", "--mirror", url, "SELECT * FROM curated.no_such_table"], elsewhere, env)
    assert missing.returncode == 2 and "not in the published mirror" in missing.stderr, missing.stderr


def test_only_what_changed_is_uploaded_and_nothing_when_nothing_changed(warehouse, s3_env):
    settings, con = warehouse
    _fill(con, "v1", paragraphs=50)
    export_curated_parquet(con, settings.parquet_dir)
    url = _prefix(s3_env)
    store = open_store(url)
    first = publish_mirror(settings.parquet_dir, store)
    before = _objects(s3_env, url)

    export_curated_parquet(con, settings.parquet_dir)               # a run that changed nothing
    again = publish_mirror(settings.parquet_dir, store)
    assert (again.generation, again.uploaded) == (2, []) and again.reused == len(first.uploaded)
    after = _objects(s3_env, url)
    written = {name for name in after if before.get(name) != after[name]}
    assert written == {"generations/00000002.json", POINTER}, written     # no data object written again

    assert publish_mirror(settings.parquet_dir, store).unchanged    # the same local generation: nothing at all
    assert _objects(s3_env, url) == after

    con.execute("INSERT INTO curated.echr_paragraphs (itemid, part, text, ordinal, raw_sha256, updated_at) "
                "SELECT '001-2', 'judgment', 'v2', i, 'sha', now() FROM range(5) t(i)")   # new rows of one table
    export_curated_parquet(con, settings.parquet_dir)
    third = publish_mirror(settings.parquet_dir, store)
    assert [n.split("/")[1:3] for n in third.uploaded] == [["curated", "echr_paragraphs"]], third.uploaded
    reader = find_published(open_store(url))
    assert reader.generation == 3 and len(reader.files["curated.echr_paragraphs"]) == 2


def test_old_generations_are_pruned_but_never_the_current_nor_the_one_before(warehouse, s3_env):
    settings, con = warehouse
    url = _prefix(s3_env)
    store = open_store(url)
    for version in ("v1", "v2", "v3", "v4"):
        _fill(con, version)
        export_curated_parquet(con, settings.parquet_dir)
        publish_mirror(settings.parquet_dir, store, keep=2)
    names = store.list()
    assert sorted(n for n in names if n.startswith("generations/")) == \
        ["generations/00000003.json", "generations/00000004.json"]
    listed = set()
    for generation in ("00000003", "00000004"):
        manifest = json.loads(store.get(f"generations/{generation}.json"))
        listed |= {p["object"] for t in manifest["tables"].values() for p in t["parts"]}
    assert {n for n in names if n.startswith("data/")} == listed     # no object of a pruned generation is left
    con_v3 = find_published(store)
    assert con_v3.generation == 4


KILLED_PUBLISH = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from caseforge.store import Store, open_store
    from caseforge.warehouse.published import publish_mirror

    real_put_file = Store.put_file
    uploads = []
    def put_file(self, name, path):                # test double around the real upload: killed after the second
        real_put_file(self, name, path)
        uploads.append(name)
        if len(uploads) == 2:
            os.kill(os.getpid(), signal.SIGKILL)
    Store.put_file = put_file
    publish_mirror(Path(sys.argv[1]), open_store(sys.argv[2]))
""")


def test_a_publish_killed_midway_leaves_readers_on_the_previous_generation_and_the_next_completes_it(
        warehouse, s3_env, tmp_path):
    settings, con = warehouse
    _fill(con, "old", paragraphs=3)
    export_curated_parquet(con, settings.parquet_dir)
    url = _prefix(s3_env)
    publish_mirror(settings.parquet_dir, open_store(url))
    _fill(con, "new", paragraphs=3)                       # both tables change: several files to upload
    con.execute("INSERT INTO ops.runs (kind, target, started_at, status) VALUES ('ingest', 'oyez', now(), 'succeeded')")
    export_curated_parquet(con, settings.parquet_dir)
    before = _objects(s3_env, url)

    killed = subprocess.run([sys.executable, "-c", KILLED_PUBLISH, str(settings.parquet_dir), url],
                            env={**os.environ, **s3_env.env()}, capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr
    uploaded = set(_objects(s3_env, url)) - set(before)
    assert len(uploaded) == 2 and all(n.startswith("data/") for n in uploaded), uploaded

    elsewhere = tmp_path / "reader"
    elsewhere.mkdir()
    query = ["sql", "--mirror", url, "--format", "csv",
             "SELECT (SELECT name FROM curated.scotus_legacy) || ',' || (SELECT string_agg(DISTINCT text) "
             "FROM curated.echr_paragraphs) AS v"]
    done = _caseforge(query, elsewhere, _reader_env(s3_env))
    assert (done.returncode, done.stdout.split()) == (0, ["v", '"old,old"']), (done.stdout, done.stderr)

    con.close()
    from caseforge.session import run_session
    with overriding({"mirror": {"publish": url}}):
        with run_session(load_settings(settings.db_path), "ingest", "next"):     # the next run publishes at its end
            pass
    con = connect(settings.db_path)
    publish = con.execute("SELECT status, counts FROM ops.runs WHERE kind = 'publish'").fetchall()
    con.close()
    assert [status for status, _ in publish] == ["succeeded"], publish
    counts = json.loads(publish[0][1])
    assert counts["generation"] == 2 and counts["files_reused"] >= 2          # what the kill uploaded is kept
    assert set(uploaded) <= set(_objects(s3_env, url))
    done = _caseforge(query, elsewhere, _reader_env(s3_env))
    assert (done.returncode, done.stdout.split()) == (0, ["v", '"new,new"']), (done.stdout, done.stderr)
    status = _caseforge(["status", "--mirror", url, "--format", "json"], elsewhere, _reader_env(s3_env))
    assert [r["target"] for r in json.loads(status.stdout)["runs"]][0] == "next", status.stderr


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("problem", ["wrong credentials", "missing bucket", "unreachable endpoint"])
def test_a_store_that_cannot_be_used_is_one_line_naming_it(warehouse, s3_env, monkeypatch, tmp_path, capsys,
                                                            problem):
    settings, con = warehouse
    _fill(con, "v1")
    export_curated_parquet(con, settings.parquet_dir)
    url, endpoint = _prefix(s3_env), None
    if problem == "wrong credentials":
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    elif problem == "missing bucket":
        url = "s3://no-such-bucket/mirror"
    else:
        endpoint = f"http://127.0.0.1:{_closed_port()}"
    expected = {"wrong credentials": "the credentials were refused", "missing bucket": "does not exist there",
                "unreachable endpoint": "cannot reach the endpoint"}[problem]
    with pytest.raises(StoreError) as publishing:
        publish_mirror(settings.parquet_dir, open_store(url, endpoint_url=endpoint), check_timeout_s=30)
    with pytest.raises(StoreError) as reading:
        find_published(open_store(url, endpoint_url=endpoint), check_timeout_s=30)
    for exc in (publishing.value, reading.value):
        assert "\n" not in str(exc) and str(exc).startswith(f"store {url}") and expected in str(exc), str(exc)

    from caseforge.cli import main                              # in process: a subprocess per case costs seconds
    if endpoint:
        monkeypatch.setenv("AWS_ENDPOINT_URL_S3", endpoint)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["sql", "--mirror", url, "SELECT 1"]) == 2
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1 and stderr.startswith(f"caseforge: store {url}") and expected in stderr, stderr


def test_a_failed_publish_fails_its_own_run_and_the_nightly_and_leaves_the_warehouse_alone(warehouse, s3_env):
    from caseforge.cli import main
    from caseforge.flows.nightly_runner import NightlyOptions, run_nightly

    settings, con = warehouse
    _fill(con, "v1")
    con.close()
    url = "s3://no-such-bucket/mirror"
    with overriding({"mirror": {"publish": url, "check_timeout_s": 30}}):
        result = run_nightly(load_settings(settings.db_path),
                             NightlyOptions(sources=[], release_dir=settings.db_path.parent / "releases"),
                             sources={}, builders={}, evaluations={}, releases={}, plots={})
    assert not result.ok
    publish = [o for o in result.outcomes if o.stage == "publish"]
    assert [(o.name, o.status) for o in publish] == [("mirror", "failed")]
    assert publish[0].failures[0].startswith(f"mirror not published: store {url}"), publish[0].failures

    con = connect(settings.db_path)
    runs = con.execute("SELECT kind, target, status, message FROM ops.runs ORDER BY run_id").fetchall()
    assert [r[:3] for r in runs] == [("nightly", "all", "succeeded"), ("publish", url, "failed")]
    assert "does not exist there" in runs[1][3]
    assert con.execute("SELECT name FROM curated.scotus_legacy").fetchall() == [("v1",)]
    assert con.execute("SELECT count(*) FROM curated.echr_paragraphs").fetchone() == (3,)
    con.close()
    assert (settings.parquet_dir / "scotus_legacy.parquet").is_file()      # the local mirror was written

    from caseforge.session import run_session
    with overriding({"mirror": {"publish": url, "check_timeout_s": 30}}):
        with run_session(load_settings(settings.db_path), "ingest", "single") as single:    # a single run: its report fails (exit 1)
            pass
    [reason] = single.report.failures
    assert reason.startswith(f"mirror not published: store {url}"), reason
    con = connect(settings.db_path)
    assert con.execute("SELECT target, status FROM ops.runs WHERE run_id > 2 ORDER BY run_id").fetchall() == \
        [("single", "succeeded"), (url, "failed")]
    con.close()

    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["status", "--db", str(settings.db_path), "--format", "csv"]) == 0
    assert f"publish,{url},failed" in out.getvalue()


def test_a_prefix_holding_anything_else_is_refused_before_any_upload(warehouse, s3_env):
    """A publish prunes what no generation lists: it never publishes into a prefix that holds other objects."""
    settings, con = warehouse
    _fill(con, "v1")
    export_curated_parquet(con, settings.parquet_dir)
    url = _prefix(s3_env)
    store = open_store(url)
    store.put("data/notes.csv", b"someone else's")
    with pytest.raises(StoreError) as caught:
        publish_mirror(settings.parquet_dir, store)
    assert str(caught.value) == (f"store {store.describe()}: holds 1 object(s) that are not part of a published "
                                 "caseforge mirror (first: data/notes.csv), which a publish could prune: give the "
                                 "mirror a prefix of its own")
    assert store.list() == ["data/notes.csv"]


def test_the_documented_duckdb_polars_and_pandas_readers_read_every_row(warehouse, s3_env, monkeypatch):
    """docs/configuration.md "Publishing the mirror": its block, run as written, with the read-only identity."""
    settings, con = warehouse
    _fill(con, "v1", paragraphs=7)
    export_curated_parquet(con, settings.parquet_dir)
    url = _prefix(s3_env)
    publish_mirror(settings.parquet_dir, open_store(url))
    block = block_after("docs/configuration.md", "Plain DuckDB, polars and pandas read the same files", "python")
    for name, value in s3_env.env(s3_env.ro).items():
        monkeypatch.setenv(name, value)
    names = {"MIRROR": url}
    exec(compile(block, "docs/configuration.md", "exec"), names)  # noqa: S102 - the page's own example
    assert names["cases"] == 1
    assert names["legacy"]["name"].to_list() == ["v1"]
    assert len(names["paragraphs"]) == 7 and set(names["paragraphs"]["text"]) == {"v1"}


def test_a_folder_store_publishes_too_but_never_into_the_warehouses_own_files(warehouse, tmp_path):
    from caseforge.session import run_session

    settings, con = warehouse
    _fill(con, "v1")
    con.close()
    folder = tmp_path / "published"
    for target, expected in ((settings.parquet_dir / "pub", "failed"), (folder, "succeeded")):
        with overriding({"mirror": {"publish": str(target)}}):
            try:
                with run_session(load_settings(settings.db_path), "ingest", "folder"):
                    pass
            except Exception as exc:            # noqa: BLE001 - the refused folder: checked below
                assert expected == "failed" and "refusing to write the published mirror" in str(exc), exc
    con = connect(settings.db_path)
    assert con.execute("SELECT status FROM ops.runs WHERE kind = 'publish' ORDER BY run_id").fetchall() == \
        [("failed",), ("succeeded",)]
    con.close()
    assert not (settings.parquet_dir / "pub").exists()
    published = find_published(open_store(folder))
    assert published.generation == 1 and "curated.scotus_legacy" in published.files


def test_an_open_reader_keeps_reading_the_generation_it_resolved(warehouse, s3_env):
    """A publish meanwhile moves the pointer; a connection already open reads only its own generation's objects."""
    from caseforge.warehouse.query import open_published_for_query

    settings, con = warehouse
    _fill(con, "old")
    export_curated_parquet(con, settings.parquet_dir)
    url = _prefix(s3_env)
    publish_mirror(settings.parquet_dir, open_store(url))
    reader, mode = open_published_for_query(url)
    try:
        _fill(con, "new")
        export_curated_parquet(con, settings.parquet_dir)
        assert publish_mirror(settings.parquet_dir, open_store(url)).generation == 2
        assert mode == "published"
        assert reader.execute("SELECT name FROM curated.scotus_legacy").fetchall() == [("old",)]
        assert reader.execute("SELECT DISTINCT text FROM curated.echr_paragraphs").fetchall() == [("old",)]
    finally:
        reader.close()
    fresh, _ = open_published_for_query(url)
    assert fresh.execute("SELECT name FROM curated.scotus_legacy").fetchall() == [("new",)]
    fresh.close()
