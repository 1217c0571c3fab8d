"""Every command that lists rows (`sql`, `quality`, `status`, `llm stats`, `llm models`) has the same formats:
a table for people (numbers rounded) and csv / json for programs (exact numbers, and stdout holds the data
alone: notes go to stderr). The read-only ones answer from the warehouse's Parquet mirror while a run holds
the warehouse."""
from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from datetime import datetime, timezone

import pytest
from pydantic import BaseModel
from warehouse_holder import held_by_another_process

from caseforge.cli import main
from caseforge.llm import LLMRequest, run_job
from caseforge.llm.types import Completion
from caseforge.run_record import finish_run, start_run
from caseforge.settings import load_settings
from caseforge.stage_report import StageReport
from caseforge.warehouse.connection import connect
from caseforge.warehouse.mirror import export_curated_parquet
from caseforge.warehouse.statements import run_sql

STAGE_DURATION_S = 20.928926631000195        # a stage's duration as the nightly records it
LATENCY_S = 0.123456789


class Number(BaseModel):
    value: int


class SlowBackendDouble:
    """Test double of an LLM backend: every answer took LATENCY_S."""

    name = "slow-double"
    model = "slow-double-model"
    batch_size = 8

    def complete_batch(self, requests):
        return [Completion(text='{"value": 1}', prompt_tokens=7, completion_tokens=2, latency_s=LATENCY_S)
                for _ in requests]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """One curated row, a finished nightly with one stage, a gate result and two cached LLM calls, mirrored
    as a run leaves it."""
    db = tmp_path_factory.mktemp("listings") / "cf.duckdb"
    settings = load_settings(db)
    con = connect(db)
    con.execute("INSERT INTO curated.scotus_legacy (case_id, name, raw_sha256) VALUES (1, 'Roe v. Wade', 'x')")
    run_id = start_run(con, "nightly", "all")
    run_sql(con, "ops/record_stage.sql", [run_id, "source", "oyez", "succeeded", '{"new": 1}', STAGE_DURATION_S,
                                          None, datetime.now(timezone.utc)])
    finish_run(con, run_id, StageReport(name="nightly", counts={"new": 1}))
    con.execute("INSERT INTO ops.quality_results (run_id, table_name, suite, validated_at, success, rows_checked, "
                "rows_failed, batch_rejected) VALUES (?, 'scotus_legacy', 'scotus_legacy', now(), true, 1, 0, false)",
                [run_id])
    requests = [LLMRequest(key=k, messages=[{"role": "user", "content": k}], template_id="t", template_sha="s")
                for k in ("a", "b")]
    run_job(con, "demo/step", SlowBackendDouble(), requests, Number, max_attempts=1)
    export_curated_parquet(con, settings.parquet_dir)
    con.close()
    return db


LISTINGS = {
    "sql": ["sql", "SELECT case_id, name FROM curated.scotus_legacy"],
    "quality": ["quality"],
    "status": ["status"],
    "status --stages": ["status", "--stages"],
    "llm stats": ["llm", "stats"],
    "llm models": ["llm", "models"],
}
TAKES_DB = {"sql", "quality", "status", "status --stages", "llm stats"}


def run_listing(name: str, fmt: str, db, capsys) -> tuple[int, str, str]:
    argv = LISTINGS[name] + ["--format", fmt] + (["--db", str(db)] if name in TAKES_DB else [])
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def parsed(fmt: str, out: str):
    """What a program reading stdout gets: every line of it must belong to the data."""
    if fmt == "json":
        return json.loads(out)
    if fmt == "csv":
        header, *rows = list(csv.reader(io.StringIO(out)))
        assert rows and all(len(row) == len(header) for row in rows), out
        return [dict(zip(header, row)) for row in rows]
    lines = out.rstrip("\n").split("\n")
    assert set(lines[1]) <= {"-", "+"}, out               # header, rule, rows, "(N rows)"
    assert lines[-1].endswith("rows)") or lines[-1].endswith("row)"), out
    return lines


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
@pytest.mark.parametrize("name", list(LISTINGS))
def test_every_listing_command_prints_every_format_and_stdout_holds_only_the_data(name, fmt, warehouse, capsys,
                                                                                   monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)                            # no settings file of the developer's for `llm models`
    code, out, err = run_listing(name, fmt, warehouse, capsys)
    assert code == 0, err
    data = parsed(fmt, out)
    assert data


def test_numbers_are_rounded_in_tables_and_exact_in_csv_and_json(warehouse, capsys):
    _, table, _ = run_listing("status", "table", warehouse, capsys)
    assert "20.93" in table and str(STAGE_DURATION_S) not in table
    _, out, _ = run_listing("status", "json", warehouse, capsys)
    assert json.loads(out)["last_nightly_stages"][0]["duration_s"] == STAGE_DURATION_S
    _, out, _ = run_listing("status --stages", "csv", warehouse, capsys)
    assert float(parsed("csv", out)[0]["duration_s"]) == STAGE_DURATION_S

    _, table, _ = run_listing("llm stats", "table", warehouse, capsys)
    assert "123.46" in table and str(LATENCY_S * 1000) not in table
    _, out, _ = run_listing("llm stats", "json", warehouse, capsys)
    assert json.loads(out)[0]["mean_latency_ms"] == pytest.approx(LATENCY_S * 1000, rel=1e-12)


READ_ONLY = ("status", "quality", "llm stats", "llm models")


def test_read_only_commands_answer_from_the_mirror_while_a_run_holds_the_warehouse(warehouse, capsys, monkeypatch,
                                                                                   tmp_path):
    """... and answer the same, to the type of every number, as the warehouse does."""
    monkeypatch.chdir(tmp_path)
    from_warehouse = {name: run_listing(name, "json", warehouse, capsys)[1] for name in READ_ONLY}
    [row] = json.loads(from_warehouse["llm stats"])
    assert (row["step"], row["calls"], row["ok"], row["attempts"], row["prompt_tokens"]) == ("demo/step", 2, 2, 2, 14)
    with held_by_another_process(warehouse):
        for name in READ_ONLY:
            code, out, err = run_listing(name, "json", warehouse, capsys)
            assert code == 0, (name, err)
            if name in TAKES_DB:
                assert "answering from its Parquet mirror" in err, (name, err)
            assert out == from_warehouse[name], name


HEAVY_MODULES = ("prefect", "great_expectations", "torch", "transformers", "sentence_transformers", "vllm",
                 "llama_cpp", "datasets")
IMPORTED_BY_A_COMMAND = """
import sys
from caseforge.cli import main
code = main(sys.argv[1:])
heavy = sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[0].split(",")))
print("heavy:", ",".join(heavy), file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize("name", list(LISTINGS))
def test_read_only_commands_start_without_the_orchestration_validation_or_model_stacks(name, warehouse, tmp_path):
    """A query costs its query: a read-only command imports neither Prefect, great-expectations nor a model stack
    (each costs seconds of start-up before any work)."""
    argv = LISTINGS[name] + (["--db", str(warehouse)] if name in TAKES_DB else [])
    done = subprocess.run([sys.executable, "-c", IMPORTED_BY_A_COMMAND.replace("sys.argv[0]",
                                                                                repr(",".join(HEAVY_MODULES))),
                           *argv], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "heavy:", done.stderr
