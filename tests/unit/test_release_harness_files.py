"""The harness files the release writer puts in every benchmark release (caseforge.release.harness), on the small
warehouse of test_benchmark_releases: the samples caseforge eval would score, with the prompts its templates render;
the release check of the tasks (one line for a changed file or another version); after=; the card's items per year;
and a release whose harness tasks ran in place (Python's bytecode cache beside them) is still caseforge's to
replace."""
import importlib.util
import json
import re
import sys

import pyarrow.parquet as pq
import pytest
from test_benchmark_releases import fill

from caseforge.outputs import OutputRefused
from caseforge.release.harness import SHIPPED
from caseforge.tasks.casefacts import release as casefacts_release
from caseforge.tasks.casegen import release as casegen_release
from caseforge.tasks.casegen.eval.evaluate import EvalConfig, generation_requests, judge_request, load_items
from caseforge.warehouse.connection import connect

spec = importlib.util.spec_from_file_location("caseforge_harness_of_files_test", SHIPPED / "caseforge_harness.py")
ch = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ch)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("harness_files")
    con = connect(root / "w.duckdb")
    try:
        fill(con)
        return {"casefacts": casefacts_release.write(con, root / "casefacts").path,
                "casegen": casegen_release.write(con, root / "casegen").path, "db": root / "w.duckdb"}
    finally:
        con.close()


def test_the_samples_carry_caseforge_evals_prompts_filled_from_the_releases_data(written):
    release = ch.open_release(written["casegen"] / "harness")
    samples = {s["id"]: s for s in ch.load_samples(release, "generate")}
    con = connect(written["db"])
    try:
        items = load_items(con, None, None)
    finally:
        con.close()
    requests, _ = generation_requests(items, EvalConfig())
    assert sorted(samples) == sorted(i["item_id"] for i in items)
    for item, request in zip(items, requests):
        sample = samples[item["item_id"]]
        assert sample["messages"] == request.messages and sample["target"] == item["reference"]
        judged = judge_request(item["item_id"], item, "被告应支付借款五万元。", EvalConfig())
        assert ch.judge_messages(sample, "被告应支付借款五万元。") == judged.messages
    claims = ch.load_samples(ch.open_release(written["casefacts"] / "harness"), "closed-book", split="all")
    assert [(s["id"], s["split"]) for s in claims] == [("c62001-0", "test"), ("c50613-0", "train")]
    assert "Statement: States may not put undue burdens on abortion access." in claims[0]["messages"][1]["content"]
    assert "Doe v. Roe\nPoe v. Moe\nRoe v. Wade" in claims[0]["messages"][1]["content"]


def test_after_keeps_the_later_items_and_a_bad_day_is_one_line(written):
    release = ch.open_release(written["casegen"] / "harness")
    assert [s["id"] for s in ch.load_samples(release, "generate", after="2017-12-31")] == ["d2:facts", "d2:judgment"]
    with pytest.raises(ch.ReleaseRefused, match=r"^caseforge release refused: after must be a day written "
                                                r"YYYY-MM-DD, not '31/12/2017'$"):
        ch.load_samples(release, "generate", after="31/12/2017")
    with pytest.raises(ch.ReleaseRefused, match="no generate sample in casegen_items was decided after 2018-05-08 "
                                                r"\(the newest is from 2018-05-08\)"):
        ch.load_samples(release, "generate", after="2018-05-08")


def test_a_changed_file_or_another_version_is_refused_in_one_line(written, tmp_path):
    import shutil

    copy = tmp_path / "casegen"
    shutil.copytree(written["casegen"], copy)
    ch.open_release(copy / "harness")
    version = json.loads((copy / "release.json").read_text())["version"]
    data = copy / "data" / "casegen_items.parquet"
    data.write_bytes(data.read_bytes() + b"\0")
    with pytest.raises(ch.ReleaseRefused) as refused:
        ch.open_release(copy / "harness")
    assert str(refused.value) == (f"caseforge release refused: casegen {version}: data/casegen_items.parquet changed "
                                  "after export (sha256 differs from MANIFEST.sha256); score only the release as it "
                                  "was written")
    shutil.copy(written["casegen"] / "data" / "casegen_items.parquet", data)
    metadata = json.loads((copy / "release.json").read_text())
    (copy / "release.json").write_text(json.dumps({**metadata, "version": "2099.1.1+000000000000"}))
    with pytest.raises(ch.ReleaseRefused, match=r"release.json is casegen 2099\.1\.1\+000000000000, the harness tasks "
                                                f"were written for casegen {re.escape(version)}$"):
        ch.open_release(copy / "harness")


def test_the_card_gives_the_two_commands_and_the_items_per_year(written):
    card = (written["casegen"] / "README.md").read_text()
    assert "inspect eval harness/inspect_task.py --model openai-api/local/MODEL" in card
    assert "lm-eval run --include_path harness/lm_eval --tasks caseforge_casegen" in card
    assert "| casegen_items | 2017 | 1 |\n| casegen_items | 2018 | 2 |" in card
    assert pq.read_table(written["casegen"] / "harness" / "samples.parquet").num_rows == 3


def test_a_release_whose_harness_ran_in_place_is_still_replaced_and_anything_else_refused(tmp_path):
    con = connect(tmp_path / "w.duckdb")
    try:
        fill(con)
        folder = casegen_release.write(con, tmp_path / "casegen").path
        for rel in ("harness/__pycache__/caseforge_harness.cpython-311.pyc",
                    "harness/__pycache__/inspect_task.cpython-312.pyc", "harness/lm_eval/__pycache__/utils.cpython-311.pyc"):
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_bytes(b"bytecode")
        casegen_release.write(con, folder)
        assert not (folder / "harness" / "__pycache__").exists()
        (folder / "harness" / "__pycache__").mkdir()
        (folder / "harness" / "__pycache__" / "notes.cpython-311.pyc").write_bytes(b"not of a file it wrote")
        with pytest.raises(OutputRefused, match=r"file\(s\) it did not write \(harness/__pycache__/notes"):
            casegen_release.write(con, folder)
    finally:
        con.close()
