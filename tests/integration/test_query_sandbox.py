"""The ad-hoc query connection (`caseforge sql`, `quality`, `status`: caseforge.warehouse.query.open_for_query)
reaches the warehouse and its own Parquet mirror and nothing else: no file read or written anywhere
else, no attach, no extension install or load, and no setting that undoes that. Every attack runs
against the three ways the connection is made: read-only on the file, the reader over the Parquet mirror
that answers while a run holds the file, and the reader over a mirror published to an object store
(`--mirror s3://…`, a real S3-compatible server, the read-only identity), which must not reach any other
object of its bucket either."""
from __future__ import annotations

import uuid

import duckdb
import pytest
from warehouse_holder import held_by_another_process

from caseforge.settings import load_settings
from caseforge.warehouse.connection import connect
from caseforge.warehouse.mirror import export_curated_parquet
from caseforge.store import open_store
from caseforge.warehouse.published import publish_mirror
from caseforge.warehouse.query import open_for_query, open_published_for_query


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A warehouse with a curated row and a run, its mirror, another database beside it, a secret file."""
    root = tmp_path_factory.mktemp("sandbox")
    db = root / "wh.duckdb"
    settings = load_settings(db)
    con = connect(db)
    con.execute("INSERT INTO curated.scotus_legacy (case_id, name, raw_sha256) VALUES (1, 'A v. B', 'x')")
    con.execute("INSERT INTO ops.runs (kind, target, started_at, status) VALUES ('ingest', 'oyez', now(), 'succeeded')")
    export_curated_parquet(con, settings.parquet_dir)
    con.close()
    other = root / "other.duckdb"
    with duckdb.connect(str(other)) as o:
        o.execute("CREATE TABLE precious AS SELECT 42 AS answer")
    secret = root / "secret.csv"
    secret.write_text("user,password\nroot,hunter2\n")
    return {"root": root, "db": db, "mirror": settings.parquet_dir, "other": other, "secret": secret}


@pytest.fixture(scope="module")
def held(world):
    """Another process holds the warehouse the way a run does, so open_for_query answers from the mirror."""
    with held_by_another_process(world["db"]) as holder:
        yield holder


@pytest.fixture(scope="module")
def bucket(world, s3_server):
    """The world's mirror published to the bucket, other objects of the same bucket beside it (another prefix,
    a secret), and this process reading with the read-only identity only."""
    prefix = f"sandbox-{uuid.uuid4().hex[:8]}"
    fs = s3_server.filesystem()
    fs.pipe(f"{s3_server.bucket}/other/secret.csv", world["secret"].read_bytes())
    fs.put_file(str(world["mirror"] / "scotus_legacy.parquet"), f"{s3_server.bucket}/other/x.parquet")
    with pytest.MonkeyPatch.context() as env:
        for name, value in s3_server.env(s3_server.rw).items():
            env.setenv(name, value)
        url = f"s3://{s3_server.bucket}/{prefix}"
        publish_mirror(world["mirror"], open_store(url))
        for name, value in s3_server.env(s3_server.ro).items():
            env.setenv(name, value)
        yield {"url": url, "bucket": s3_server.bucket, "endpoint": s3_server.endpoint_url,
               "objects": open_store(url).list()}


@pytest.fixture(scope="module", params=["warehouse", "parquet", "published"])
def query(request, world):
    """open_for_query's connection: on the file, or (while another process holds the file) on the mirror;
    or open_published_for_query's on the mirror published to a bucket. Module-scoped, so pytest runs every
    test on the file first, then every test on the mirror, then on the published mirror."""
    if request.param == "parquet":
        request.getfixturevalue("held")
    if request.param == "published":
        con, mode = open_published_for_query(request.getfixturevalue("bucket")["url"])
    else:
        con, mode = open_for_query(world["db"], world["mirror"])
    assert mode == request.param
    yield con
    con.close()


def refused(con, statement: str) -> str:
    with pytest.raises(duckdb.Error) as caught:
        con.execute(statement).fetchall()
    return str(caught.value)


def test_the_warehouse_and_its_mirror_stay_readable(query):
    assert query.execute("SELECT name FROM curated.scotus_legacy").fetchall() == [("A v. B",)]
    assert query.execute("SELECT kind, target FROM ops.runs").fetchall() == [("ingest", "oyez")]


def test_copy_to_any_file_is_refused(query, world):
    target = world["root"] / "written.csv"
    refused(query, f"COPY (SELECT 'x') TO '{target}'")
    refused(query, f"COPY curated.scotus_legacy TO '{target}' (FORMAT parquet)")
    assert not target.exists()


def test_the_mirror_files_cannot_be_overwritten(query, world):
    mirror_file = world["mirror"] / "scotus_legacy.parquet"
    before = mirror_file.read_bytes()
    for options in ("(FORMAT parquet)", "(FORMAT parquet, USE_TMP_FILE false)", "(FORMAT csv)"):
        refused(query, f"COPY (SELECT 'x' AS name) TO '{mirror_file}' {options}")
    refused(query, f"COPY (SELECT 'x' AS name) TO '{world['mirror'] / 'new.parquet'}' (FORMAT parquet)")
    assert mirror_file.read_bytes() == before
    assert not (world["mirror"] / "new.parquet").exists()


def test_export_and_import_database_are_refused(query, world):
    refused(query, f"EXPORT DATABASE '{world['root'] / 'exported'}'")
    assert not (world["root"] / "exported").exists()
    refused(query, f"IMPORT DATABASE '{world['root']}'")


def test_another_database_cannot_be_attached_or_changed(query, world):
    refused(query, f"ATTACH '{world['other']}' AS o (READ_WRITE)")
    refused(query, f"ATTACH '{world['other']}' AS o (READ_ONLY)")
    refused(query, "DROP TABLE o.precious")
    refused(query, f"ATTACH '{world['root'] / 'fresh.duckdb'}' AS f")
    assert not (world["root"] / "fresh.duckdb").exists()
    with duckdb.connect(str(world["other"]), read_only=True) as o:
        assert o.execute("SELECT answer FROM precious").fetchall() == [(42,)]


@pytest.mark.parametrize("reader", [
    "SELECT * FROM read_text('{path}')",
    "SELECT * FROM read_blob('{path}')",
    "SELECT * FROM read_csv('{path}')",
    "SELECT * FROM read_csv_auto('{path}')",
    "SELECT * FROM read_json('{path}')",
    "SELECT * FROM read_parquet('{path}')",
    "SELECT * FROM parquet_metadata('{path}')",
    "SELECT * FROM sniff_csv('{path}')",
    "SELECT * FROM glob('{path}')",
    "SELECT * FROM '{path}'",
    "CALL read_text('{path}')",
])
@pytest.mark.parametrize("target", ["secret", "/etc/passwd", "/proc/self/environ", "dir"])
def test_no_local_file_can_be_read(query, world, reader, target):
    path = {"secret": world["secret"], "dir": f"{world['root']}/*"}.get(target, target)
    message = refused(query, reader.format(path=path))
    assert "hunter2" not in message and "root:" not in message


def test_the_mirror_is_read_through_its_views_not_by_path(query, world):
    """Naming a mirror file is reading a file by path; only the views (curated.*, ops.*) reach the mirror."""
    refused(query, f"SELECT * FROM read_parquet('{world['mirror'] / 'scotus_legacy.parquet'}')")
    refused(query, f"SELECT * FROM glob('{world['mirror']}/*')")


def test_extensions_are_neither_installed_nor_loaded(query):
    for statement in ("INSTALL httpfs", "LOAD httpfs", "INSTALL fts", "LOAD fts", "FORCE INSTALL json"):
        refused(query, statement)
    # a URL would auto-load httpfs and open a connection: refused before either (loopback, closed port)
    refused(query, "SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')")
    refused(query, "SELECT * FROM read_parquet('s3://bucket/x.parquet')")


@pytest.mark.parametrize("reader", [
    "SELECT * FROM read_parquet('{url}')",
    "SELECT * FROM read_csv('{url}')",
    "SELECT * FROM read_text('{url}')",
    "SELECT * FROM read_blob('{url}')",
    "SELECT * FROM parquet_metadata('{url}')",
    "SELECT * FROM glob('{url}')",
    "SELECT * FROM '{url}'",
])
@pytest.mark.parametrize("target", ["other prefix", "secret", "published object", "pointer", "whole bucket",
                                    "over http"])
def test_no_object_of_the_bucket_can_be_read_by_url(query, bucket, reader, target):
    """Not another prefix of the same bucket, not the published objects themselves (only the views read them,
    and only the generation the pointer named when the connection opened), by s3:// or by the endpoint's URL."""
    name = next(n for n in bucket["objects"] if n.startswith("data/"))
    url = {"other prefix": f"s3://{bucket['bucket']}/other/x.parquet",
           "secret": f"s3://{bucket['bucket']}/other/secret.csv",
           "published object": f"{bucket['url']}/{name}",
           "pointer": f"{bucket['url']}/current.json",
           "whole bucket": f"s3://{bucket['bucket']}/**",
           "over http": f"{bucket['endpoint']}/{bucket['bucket']}/other/secret.csv"}[target]
    message = refused(query, reader.format(url=url))
    assert "hunter2" not in message
    for statement in (f"COPY (SELECT 1 AS a) TO '{url}'", f"ATTACH '{url}' AS o",
                      f"CREATE SECRET s (TYPE s3, KEY_ID 'k', SECRET 's', ENDPOINT '{bucket['endpoint']}')"):
        refused(query, statement)


@pytest.mark.parametrize("statement", [
    "SET enable_external_access = true",
    "SET GLOBAL enable_external_access = true",
    "SET SESSION enable_external_access = true",
    "RESET enable_external_access",
    "RESET ALL",
    "PRAGMA enable_external_access = true",
    "SET lock_configuration = false",
    "RESET lock_configuration",
    "SET allowed_directories = ['/']",
    "SET allowed_paths = ['/etc/passwd']",
    "SET autoinstall_known_extensions = true",
    "SET autoload_known_extensions = true",
    "SET allow_unsigned_extensions = true",
    "SET extension_directory = '/tmp'",
    "SET temp_directory = '/tmp/elsewhere'",
    "SET disabled_filesystems = ''",
])
def test_no_setting_undoes_the_sandbox(query, world, statement):
    try:
        query.execute(statement)
    except duckdb.Error:
        pass
    assert query.execute("SELECT current_setting('enable_external_access'), current_setting('lock_configuration'), "
                         "current_setting('autoinstall_known_extensions'), current_setting('autoload_known_extensions')"
                         ).fetchone() == (False, True, False, False)
    target = world["root"] / "after-set.csv"
    refused(query, f"COPY (SELECT 1) TO '{target}'")
    refused(query, f"SELECT * FROM read_text('{world['secret']}')")
    assert not target.exists()


# --- read-only means the same on the mirror (last in the module: before the fix these changed the mirror's views) ---

@pytest.mark.parametrize("statement", [
    "CREATE TABLE curated.notes (a INTEGER)",
    "CREATE TABLE notes AS SELECT 1 AS a",
    "DROP VIEW curated.scotus_legacy",
    "CREATE OR REPLACE VIEW curated.scotus_legacy AS SELECT 1",
    "ATTACH ':memory:' AS scratch",
    "CREATE SCHEMA scratch",
    "CREATE SEQUENCE counter",
    "CREATE MACRO twice(x) AS 2 * x",
])
def test_nothing_is_created_dropped_or_attached(query, statement):
    """What the read-only file refuses, the mirror refuses too, with the same kind of error."""
    with pytest.raises((duckdb.InvalidInputException, duckdb.CatalogException)) as caught:
        query.execute(statement).fetchall()
    assert "read-only mode" in str(caught.value), str(caught.value)
    assert query.execute("SELECT name FROM curated.scotus_legacy").fetchall() == [("A v. B",)]
    assert query.execute("SELECT count(*) FROM duckdb_databases() WHERE NOT internal").fetchone() == (1,)
