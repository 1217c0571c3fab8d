"""Releases on an object store (issue 34, item 3), against a real S3-compatible server (SeaweedFS on loopback,
tests/s3_server.py): `export DATASET --out s3://…` and the nightly's `--release-dir s3://…` follow the rule of a
release folder (only over a caseforge release of that dataset; every file first, then its manifest, then the
pointer readers follow; a killed write leaves the previous release readable), and `datasets` and polars read a
release straight from the store, every record."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from doc_pages import block_after

from caseforge.cli import main
from caseforge.flows import nightly_runner
from caseforge.release.stored import POINTER, read_current
from caseforge.settings import load_settings
from caseforge.store import open_store
from caseforge.warehouse.connection import connect

CASES = [(50606, "Roe v. Wade", "1971", "1973-01-22"), (51234, "Miranda v. Arizona", "1965", "1966-06-13"),
         (60001, "Dobbs v. Jackson", "2021", "2022-06-24")]


@pytest.fixture(scope="module")
def warehouse_template(tmp_path_factory):
    """data/cf.duckdb with three SCOTUS cases (enough for the scotus release)."""
    db = tmp_path_factory.mktemp("template") / "data" / "cf.duckdb"
    con = connect(db)
    for case_id, name, term, decided in CASES:
        con.execute("INSERT INTO curated.scotus_cases (case_id, name, term, decided_date, raw_sha256, updated_at) "
                    "VALUES (?, ?, ?, CAST(? AS DATE), 'ab', now())", [case_id, name, term, decided])
    con.close()
    return db


@pytest.fixture
def warehouse(warehouse_template, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / warehouse_template.name).write_bytes(warehouse_template.read_bytes())
    return load_settings(folder / warehouse_template.name)


@pytest.fixture
def prefix(s3_env):
    """A fresh prefix of the test bucket, as an s3:// URL."""
    return f"s3://{s3_env.bucket}/releases-{uuid.uuid4().hex[:8]}"


def export(settings, out) -> int:
    return main(["export", "scotus", "--out", str(out), "--db", str(settings.db_path)])


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("caseforge: ") and "Traceback" not in err, err
    return lines[0]


def add_case(settings, case_id: int, name: str, decided: str) -> None:
    con = connect(settings.db_path)
    con.execute("INSERT INTO curated.scotus_cases (case_id, name, term, decided_date, raw_sha256, updated_at) "
                "VALUES (?, ?, '2023', CAST(? AS DATE), 'cd', now())", [case_id, name, decided])
    con.close()


def test_export_to_s3_writes_the_release_to_the_store_not_a_local_folder(warehouse, prefix, tmp_path, monkeypatch,
                                                                         capsys):
    monkeypatch.chdir(tmp_path)
    url = f"{prefix}/scotus"
    assert export(warehouse, url) == 0, capsys.readouterr().err
    assert not (tmp_path / "s3:").exists()                  # before: a local folder named "s3:"
    store = open_store(url)
    current = read_current(store)
    assert current["dataset"] == "scotus"
    names = store.list()
    folder = current["folder"]
    manifest = store.get(f"{folder}/MANIFEST.sha256").decode()
    listed = {line.split("  ", 1)[1] for line in manifest.splitlines()}
    assert set(names) == {POINTER, f"{folder}/MANIFEST.sha256"} | {f"{folder}/{rel}" for rel in listed}
    assert f"{url}/{folder}" in capsys.readouterr().out


def test_a_release_on_s3_is_byte_identical_to_the_same_release_in_a_folder(warehouse, prefix, tmp_path):
    url = f"{prefix}/scotus"
    assert export(warehouse, url) == 0
    assert export(warehouse, tmp_path / "local") == 0
    store = open_store(url)
    folder = read_current(store)["folder"]
    local = {p.relative_to(tmp_path / "local").as_posix(): p.read_bytes()
             for p in (tmp_path / "local").rglob("*") if p.is_file()}
    assert {rel: store.get(f"{folder}/{rel}") for rel in local} == local


def test_datasets_and_polars_read_a_release_straight_from_the_store(warehouse, prefix, s3_env):
    import datasets
    import polars as pl

    url = f"{prefix}/scotus"
    assert export(warehouse, url) == 0
    store = open_store(url)
    data = f"{url}/{read_current(store)['folder']}/data/scotus_cases.parquet"
    endpoint = s3_env.endpoint_url
    rw = s3_env.rw
    loaded = datasets.load_dataset("parquet", data_files=data, split="train",
                                   storage_options={"key": rw.access_key, "secret": rw.secret_key,
                                                    "client_kwargs": {"endpoint_url": endpoint}})
    assert sorted(loaded["case_id"]) == sorted(c[0] for c in CASES)
    assert sorted(loaded["name"]) == sorted(c[1] for c in CASES)
    frame = pl.read_parquet(data, storage_options={"aws_endpoint_url": endpoint, "aws_access_key_id": rw.access_key,
                                                   "aws_secret_access_key": rw.secret_key, "aws_region": "us-east-1",
                                                   "aws_allow_http": "true"})
    assert sorted(frame["case_id"].to_list()) == sorted(c[0] for c in CASES)
    jsonl = pl.read_ndjson(data.replace(".parquet", ".jsonl"),
                           storage_options={"aws_endpoint_url": endpoint, "aws_access_key_id": rw.access_key,
                                            "aws_secret_access_key": rw.secret_key, "aws_region": "us-east-1",
                                            "aws_allow_http": "true"})
    assert sorted(jsonl["name"].to_list()) == sorted(c[1] for c in CASES)


def test_the_documented_release_reader_reads_every_record(warehouse, prefix, s3_env, monkeypatch):
    """docs/releases.md "Releases on a store": its block, run as written, its two placeholders (the endpoint and the
    release URL) set to this server's, credentials from the environment as the block says."""
    import re

    url = f"{prefix}/scotus"
    assert export(warehouse, url) == 0
    block = block_after("docs/releases.md", "Readers follow the pointer, then read the files straight from the store",
                        "python")
    block, endpoints = re.subn(r'^endpoint = "[^"]*"', f'endpoint = "{s3_env.endpoint_url}"', block, flags=re.M)
    block, bases = re.subn(r'^base = "[^"]*"', f'base = "{url}"', block, flags=re.M)
    assert endpoints == bases == 1, block
    for name, value in s3_env.env(s3_env.ro).items():
        monkeypatch.setenv(name, value)
    names: dict = {}
    exec(compile(block, "docs/releases.md", "exec"), names)       # noqa: S102 - the page's own example
    assert sorted(names["rows"]["case_id"]) == sorted(c[0] for c in CASES)
    assert sorted(names["frame"]["case_id"].to_list()) == sorted(c[0] for c in CASES)


# --- only over a caseforge release of the same dataset ---

def test_a_prefix_holding_anything_else_is_refused_in_one_line_and_left_as_it_was(warehouse, prefix, capsys):
    url = f"{prefix}/scotus"
    store = open_store(url)
    store.put("notes.txt", b"mine")
    assert export(warehouse, url) == 2
    line = one_line(capsys.readouterr().err)
    assert f"refusing to write the scotus release to {url}: it holds notes.txt" in line
    assert store.list() == ["notes.txt"] and store.get("notes.txt") == b"mine"


def test_another_datasets_release_and_a_release_with_a_foreign_file_are_refused(warehouse, prefix, capsys):
    url = f"{prefix}/scotus"
    assert export(warehouse, url) == 0
    store = open_store(url)
    current = read_current(store)
    other = {**current, "dataset": "casefacts"}
    store.put(POINTER, json.dumps(other).encode())
    assert export(warehouse, url) == 2
    assert "is the 'casefacts' release, not 'scotus'" in one_line(capsys.readouterr().err)
    store.put(POINTER, json.dumps(current).encode())
    store.put(f"{current['folder']}/data/extra.csv", b"x")
    before = {name: store.get(name) for name in store.list()}
    assert export(warehouse, url) == 2
    assert "file(s) its manifest does not list (data/extra.csv)" in one_line(capsys.readouterr().err)
    assert {name: store.get(name) for name in store.list()} == before


def test_the_same_release_written_again_uploads_nothing(warehouse, prefix, s3_env):
    url = f"{prefix}/scotus"
    assert export(warehouse, url) == 0
    fs = s3_env.filesystem()
    stamps = {k: v["LastModified"] for k, v in fs.find(url, detail=True).items()}
    assert export(warehouse, url) == 0
    assert {k: v["LastModified"] for k, v in fs.find(url, detail=True).items()} == stamps


# --- a bad store: one line naming it, before anything is read ---

def test_wrong_credentials_are_one_line_naming_the_store(warehouse, prefix, monkeypatch, capsys):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    assert export(warehouse, f"{prefix}/scotus") == 2
    line = one_line(capsys.readouterr().err)
    assert f"store {prefix}/scotus (endpoint http://127.0.0.1:" in line and "credentials were refused" in line


def test_a_missing_bucket_is_one_line_naming_the_store(warehouse, s3_env, capsys):
    url = f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/releases/scotus"
    assert export(warehouse, url) == 2
    line = one_line(capsys.readouterr().err)
    assert f"store {url} (endpoint" in line and "does not exist there" in line
    assert url.split("/")[2] not in s3_env.filesystem().ls("")        # and not created by the check


def test_an_unreachable_endpoint_is_one_line_naming_the_store(warehouse, prefix, monkeypatch, capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]            # closed once the block ends: connections are refused
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{port}")
    assert export(warehouse, f"{prefix}/scotus") == 2
    line = one_line(capsys.readouterr().err)
    assert f"store {prefix}/scotus (endpoint http://127.0.0.1:{port})" in line and "cannot reach the endpoint" in line


def test_the_endpoint_may_come_from_the_settings_file(warehouse, prefix, s3_env, tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3")
    config = tmp_path / "caseforge.toml"
    config.write_text(f'[release]\nstore_endpoint_url = "{s3_env.endpoint_url}"\n')
    monkeypatch.setenv("CASEFORGE_CONFIG", str(config))
    assert export(warehouse, f"{prefix}/scotus") == 0, capsys.readouterr().err
    assert read_current(open_store(f"{prefix}/scotus", s3_env.endpoint_url))["dataset"] == "scotus"


# --- a killed write leaves the previous release readable; the next write completes ---

KILLED_EXPORT = textwrap.dedent("""
    import os, signal, sys
    from caseforge.store import Store
    def dying(upload):
        def wrapped(self, name, *args):
            if name.endswith(sys.argv[1]):
                os.kill(os.getpid(), signal.SIGKILL)    # killed just before this object is written
            return upload(self, name, *args)
        return wrapped
    Store.put_file, Store.put = dying(Store.put_file), dying(Store.put)
    from caseforge.cli import main
    sys.exit(main(["export", "scotus", "--out", sys.argv[2], "--db", sys.argv[3]]))
""")


def killed_export(settings, url: str, before: str, env: dict) -> None:
    """`export scotus --out url` in a process of its own, SIGKILLed just before it writes the object `before`."""
    done = subprocess.run([sys.executable, "-c", KILLED_EXPORT, before, url, str(settings.db_path)],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=240)
    assert done.returncode == -signal.SIGKILL, done.stderr


def read_all(url: str, s3) -> list[int]:
    """Every case id of the release the pointer names, read as a reader would (datasets, from the store)."""
    import datasets

    current = read_current(open_store(url))
    loaded = datasets.load_dataset("parquet", data_files=f"{url}/{current['folder']}/data/scotus_cases.parquet",
                                   split="train", storage_options={
                                       "key": s3.rw.access_key, "secret": s3.rw.secret_key,
                                       "client_kwargs": {"endpoint_url": s3.endpoint_url}})
    return sorted(loaded["case_id"])


def intact(store, folder: str) -> bool:
    import hashlib

    manifest = store.get(f"{folder}/MANIFEST.sha256").decode()
    return all(hashlib.sha256(store.get(f"{folder}/{rel}")).hexdigest() == sha
               for sha, rel in (line.split("  ", 1) for line in manifest.splitlines()))


def test_a_write_killed_midway_leaves_the_previous_release_readable_and_the_next_completes(warehouse, prefix,
                                                                                         s3_env):
    url = f"{prefix}/scotus"
    assert export(warehouse, url) == 0
    store = open_store(url)
    first = read_current(store)
    add_case(warehouse, 70001, "Loper Bright v. Raimondo", "2024-06-28")
    killed_export(warehouse, url, "data/scotus_cases.jsonl", s3_env.env())      # after release.json and more
    assert read_current(store) == first                          # readers still on the previous release
    assert intact(store, first["folder"])
    assert read_all(url, s3_env) == sorted(c[0] for c in CASES)
    unfinished = {n.split("/", 1)[0] for n in store.list()} - {first["folder"], POINTER}
    assert len(unfinished) == 1                                  # the killed write's folder, without a manifest
    assert not store.exists(f"{unfinished.pop()}/MANIFEST.sha256")

    add_case(warehouse, 70002, "Trump v. United States", "2024-07-01")     # the next write is a newer release
    assert export(warehouse, url) == 0
    second = read_current(store)
    assert second["folder"] != first["folder"] and intact(store, second["folder"])
    assert read_all(url, s3_env) == sorted([c[0] for c in CASES] + [70001, 70002])
    # the killed write's folder is gone; the previous release stays for a reader that read the old pointer
    assert {n.split("/", 1)[0] for n in store.list()} == {first["folder"], second["folder"], POINTER}


def test_a_write_killed_just_before_its_pointer_is_completed_by_the_next_write(warehouse, prefix, s3_env):
    url = f"{prefix}/scotus"
    assert export(warehouse, url) == 0
    store = open_store(url)
    first = read_current(store)
    add_case(warehouse, 70001, "Loper Bright v. Raimondo", "2024-06-28")
    killed_export(warehouse, url, POINTER, s3_env.env())          # every file and the manifest up, no pointer
    assert read_current(store) == first
    assert read_all(url, s3_env) == sorted(c[0] for c in CASES)
    assert export(warehouse, url) == 0                               # the same data: the same release, pointed to
    second = read_current(store)
    assert second["folder"] != first["folder"] and intact(store, second["folder"])
    assert read_all(url, s3_env) == sorted([c[0] for c in CASES] + [70001])


# --- the nightly's --release-dir ---

def test_the_nightly_writes_its_releases_to_a_store_and_nothing_again_when_nothing_changed(warehouse, prefix,
                                                                                          s3_env, tmp_path):
    from caseforge.flows import registry

    options = nightly_runner.NightlyOptions(release_dir=prefix)
    releases = {"scotus": registry.RELEASES["scotus"]}
    result = nightly_runner.run_nightly(warehouse, options, sources={}, builders={}, evaluations={},
                                        releases=releases, plots={})
    assert result.ok, result.failures()
    assert not (tmp_path / "s3:").exists() and not Path("s3:").exists()
    store = open_store(f"{prefix}/scotus")
    current = read_current(store)
    assert result.locations["release-scotus"][0] == f"{prefix}/scotus/{current['folder']}"
    assert read_all(f"{prefix}/scotus", s3_env) == sorted(c[0] for c in CASES)
    fs = s3_env.filesystem()
    stamps = {k: v["LastModified"] for k, v in fs.find(prefix, detail=True).items()}
    again = nightly_runner.run_nightly(warehouse, options, sources={}, builders={}, evaluations={},
                                       releases=releases, plots={})
    assert again.ok and [o.status for o in again.outcomes if o.stage == "export"] == ["skipped"]
    assert {k: v["LastModified"] for k, v in fs.find(prefix, detail=True).items()} == stamps


def test_the_nightly_refuses_an_unwritable_release_store_before_the_run_begins(warehouse, prefix, monkeypatch):
    from caseforge.flows import registry
    from caseforge.store import StoreError

    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    with pytest.raises(StoreError, match=r"^store s3://.*credentials were refused"):
        nightly_runner.run_nightly(warehouse, nightly_runner.NightlyOptions(release_dir=prefix), sources={},
                                   builders={}, evaluations={}, releases={"scotus": registry.RELEASES["scotus"]},
                                   plots={})
    con = connect(warehouse.db_path, read_only=True)
    assert con.execute("SELECT count(*) FROM ops.runs").fetchone() == (0,)
    con.close()


def test_the_nightly_flow_keeps_a_store_url_a_url():
    from caseforge.flows.nightly_plan import release_location

    assert release_location("s3://bucket/releases") == "s3://bucket/releases"
    assert release_location("out/releases") == Path("out/releases")
    assert release_location(None) is None


def test_a_store_that_fails_after_the_check_fails_the_export_stage_not_the_nightly(warehouse, prefix, monkeypatch):
    """The store refuses the credentials only once the run is under way (here: its check before the run is
    skipped): the export stage fails, naming the store, the run is recorded failed, and nothing is linked."""
    from caseforge.flows import registry

    monkeypatch.setattr(nightly_runner, "prepare_store_release", lambda url, dataset: None)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    result = nightly_runner.run_nightly(warehouse, nightly_runner.NightlyOptions(release_dir=prefix), sources={},
                                        builders={}, evaluations={}, releases={"scotus": registry.RELEASES["scotus"]},
                                        plots={})
    assert not result.ok
    [export_stage] = [o for o in result.outcomes if o.stage == "export"]
    assert export_stage.status == "failed"
    assert any(f"store {prefix}/scotus" in f and "credentials were refused" in f for f in export_stage.failures)
    assert "release-scotus" not in result.locations
    con = connect(warehouse.db_path, read_only=True)
    assert con.execute("SELECT status FROM ops.runs WHERE kind = 'nightly'").fetchall() == [("failed",)]
    assert con.execute("SELECT count(*) FROM curated.scotus_cases").fetchone() == (len(CASES),)
    con.close()


def test_the_command_says_a_bad_store_in_one_line_on_its_own_stderr(warehouse, prefix, s3_env):
    """As a user runs it (its own process, its own logging): wrong credentials are one line on stderr, without
    the AWS libraries' own log lines around it."""
    env = {**os.environ, **s3_env.env(), "AWS_SECRET_ACCESS_KEY": "not-the-secret"}
    done = subprocess.run([sys.executable, "-m", "caseforge", "export", "scotus", "--out", f"{prefix}/scotus",
                           "--db", str(warehouse.db_path)], env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 2
    assert "credentials were refused" in one_line(done.stderr)


def test_a_file_url_is_the_folder_it_names(warehouse, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert export(warehouse, f"file://{tmp_path / 'out' / 'scotus'}") == 0
    assert (tmp_path / "out" / "scotus" / "MANIFEST.sha256").is_file() and not (tmp_path / "file:").exists()
