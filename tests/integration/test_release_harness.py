"""Every benchmark release runs where researchers evaluate models (issue 42): the inspect_ai task and the
lm-evaluation-harness task that caseforge writes into each release (CaseFacts, AQuAECHR, CaseGen, built from the
samples: tests/sample_releases.py) run in .venv-harness, which has the harnesses and no caseforge, against a real
OpenAI-compatible server (llama_cpp.server with the packaged SmolLM2), keep only the items decided after a day with
`after=`, refuse a release changed after export in one line, and run as docs/evaluate.md shows them. The same
numbers as `caseforge eval`: test_release_harness_replay.py.

lm-eval indexes its thousands of built-in tasks at every start (tens of seconds), so each scenario runs the three
releases' lm-eval tasks in one command, from a folder holding the three task folders (tests/harness_runs.py).
"""
from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from chat_server_double import ChatServerDouble
from doc_pages import read
from harness_runs import (DATASETS, HARNESS_BIN, PROJECT_ROOT, TIMINGS, any_answer, dated_ids, harness_env,
                          inspect_eval, inspect_log, lm_eval, lm_eval_folder, lm_eval_results, positions, timed,
                          timings)  # noqa: F401  (timings: the module's report)
from llama_server import ALIAS, free_port, llama_cpp_server
from s3_server import stop_process_group

from caseforge.release import verify_release
from caseforge.release.writer import not_our_release

# each test's budget counts the fixtures it is the first to need (the releases: about a minute on 2 idle cores)
pytestmark = [pytest.mark.slow, pytest.mark.samples, pytest.mark.timeout(1500), pytest.mark.usefixtures("timings")]

# ---------------------------------------------------------------- no caseforge


def test_the_harness_venv_has_the_harnesses_and_no_caseforge(harness_releases):
    done = subprocess.run([str(HARNESS_BIN / "python"), "-c", "import caseforge"], capture_output=True, text=True,
                          cwd=harness_releases.releases["casefacts"], env=harness_env(harness_releases.root))
    assert done.returncode != 0 and "No module named 'caseforge'" in done.stderr
    for name, release in harness_releases.releases.items():
        files = sorted(p.relative_to(release).as_posix() for p in (release / "harness").rglob("*")
                       if p.is_file() and "__pycache__" not in p.parts)      # a harness run before may leave its cache
        assert files == ["harness/caseforge_harness.py", "harness/caseforge_scoring.py", "harness/inspect_task.py",
                         f"harness/lm_eval/caseforge_{name}.yaml", "harness/lm_eval/utils.py", "harness/pin.json",
                         "harness/samples.parquet"], name
        for path in ("harness/caseforge_harness.py", "harness/caseforge_scoring.py", "harness/inspect_task.py",
                     "harness/lm_eval/utils.py"):
            tree = ast.parse((release / path).read_text())
            imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
            imported += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
            assert not [m for m in imported if m.split(".")[0] == "caseforge"], path


# ---------------------------------------------------------------- a real OpenAI-compatible server


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory, harness_releases):
    started = time.monotonic()
    with llama_cpp_server(tmp_path_factory.mktemp("llama_cpp_server"), n_ctx=4096) as base_url:
        TIMINGS["llama_cpp.server start"] = round(time.monotonic() - started, 1)
        yield base_url


def shortest(release: Path, n: int) -> list[str]:
    """The ids of the `n` CaseGen items with the shortest prompts (the small model's window is 4096 tokens)."""
    rows = pq.read_table(release / "harness" / "samples.parquet").to_pylist()
    return [r["id"] for r in sorted(rows, key=lambda r: (len(r["messages"]), r["id"]))[:n]]


def test_each_release_runs_in_both_harnesses_against_llama_cpp_server(harness_releases, smollm2, tmp_path):
    """A few items of each (CaseFacts 2, AQuAECHR 1 with its five retrieved passages, CaseGen its shortest item) and
    48 new tokens a reply, so that the 135M model on 2 CPU cores takes minutes, not an hour: every run exits 0 and
    its log holds a score for every sample it ran. (The judge of CaseGen is exercised by the replayed answers.)"""
    casegen_ids = shortest(harness_releases.releases["casegen"], 1)
    options = {"casefacts": ["--limit", "2"], "aquaechr": ["--limit", "1"], "casegen": ["--sample-id", casegen_ids[0]]}
    for name, release in harness_releases.releases.items():
        done, logs = inspect_eval(release, tmp_path, smollm2, ALIAS, "--max-tokens", "48", *options[name],
                                  label=f"inspect {name} on llama_cpp.server")
        assert done.returncode == 0, done.stderr[-3000:]
        log = inspect_log(logs)
        assert log["status"] == "success" and len(log["samples"]) == {"casefacts": 2}.get(name, 1), name
        assert all(sample["scores"] for sample in log["samples"]), name
    chosen = {"caseforge_casefacts": [0, 1], "caseforge_aquaechr": [0],
              "caseforge_casegen": positions(harness_releases.releases["casegen"], casegen_ids)}
    done, out = lm_eval(lm_eval_folder(harness_releases.releases, tmp_path), tmp_path, smollm2, ALIAS,
                        "--samples", json.dumps(chosen), "--gen_kwargs", "max_gen_toks=48",
                        label="lm-eval three tasks on llama_cpp.server")
    assert done.returncode == 0, done.stderr[-3000:]
    metrics, samples = lm_eval_results(out)
    assert set(metrics) == set(samples) == set(chosen)
    for task, logged in samples.items():
        assert len(logged) == len(chosen[task]), task
        assert all(any(key in entry for key in ("verdict_accuracy", "rouge_l", "rougeL_char_f1")) for entry in logged)


# ---------------------------------------------------------------- after=


AFTER = {"casefacts": ("1950-01-01", "test", "claim_id", "source_date"),
         "aquaechr": ("2023-08-30", "aquaechr_qa", "qa_id", "source_date"),
         "casegen": ("2018-12-31", "casegen_items", "item_id", "judgment_date")}


def test_after_keeps_only_the_items_decided_after_the_day(harness_releases, tmp_path):
    with ChatServerDouble(any_answer) as double:
        for name, release in harness_releases.releases.items():
            after, split, id_column, date_column = AFTER[name]
            expected = dated_ids(release, split, id_column, date_column, after)
            every = dated_ids(release, split, id_column, date_column, "0000-00-00")
            done, logs = inspect_eval(release, tmp_path, double.base_url, "double", "-T", f"after={after}",
                                      label=f"inspect {name} after={after}")
            assert done.returncode == 0, done.stderr[-3000:]
            ran = sorted(s["id"] for s in inspect_log(logs)["samples"])
            assert ran == expected and ran, name
            if name != "aquaechr":         # its sample guide has one version date: every pair is as new as the next
                assert len(ran) < len(every), name
        done, _ = inspect_eval(harness_releases.releases["aquaechr"], tmp_path, double.base_url, "double", "-T",
                               "after=2023-08-31", label="inspect aquaechr after its newest day")
        assert done.returncode != 0
        assert done.stderr.strip().splitlines()[-1] == ("caseforge release refused: aquaechr: no rtg-vanilla sample "
                                                        "in aquaechr_qa was decided after 2023-08-31 (the newest is "
                                                        "from 2023-08-31)")
        days = {name: AFTER[name][0] for name in DATASETS}
        done, out = lm_eval(lm_eval_folder(harness_releases.releases, tmp_path), tmp_path, double.base_url, "double",
                            "--metadata", json.dumps({"after": days}), label="lm-eval three tasks with after=")
    assert done.returncode == 0, done.stderr[-3000:]
    _, samples = lm_eval_results(out)
    for name, release in harness_releases.releases.items():
        after, split, id_column, date_column = AFTER[name]
        assert sorted(entry["doc"]["id"] for entry in samples[f"caseforge_{name}"]) == \
            dated_ids(release, split, id_column, date_column, after), name


# ---------------------------------------------------------------- a changed release


def test_a_release_changed_after_export_is_refused_by_both_harnesses_in_one_line(harness_releases, tmp_path):
    release = tmp_path / "casefacts"
    shutil.copytree(harness_releases.releases["casefacts"], release)
    table = pq.read_table(release / "data" / "test.parquet")
    labels = ["SUPPORTED"] * table.num_rows
    pq.write_table(table.set_column(table.schema.get_field_index("label"), "label", pa.array(labels)),
                   release / "data" / "test.parquet")
    line = (f"caseforge release refused: casefacts {json.loads((release / 'release.json').read_text())['version']}: "
            "data/test.parquet changed after export (sha256 differs from MANIFEST.sha256); score only the release as "
            "it was written")
    with ChatServerDouble(any_answer) as double:
        done, _ = inspect_eval(release, tmp_path, double.base_url, "double", label="inspect on a changed release")
        assert done.returncode != 0 and done.stderr.strip().splitlines()[-1] == line, done.stderr[-2000:]
        assert "Traceback" not in done.stderr
        done, _ = lm_eval(release / "harness" / "lm_eval", tmp_path, double.base_url, "double",
                          tasks="caseforge_casefacts", label="lm-eval on a changed release")
        assert done.returncode != 0 and done.stderr.strip().splitlines()[-1] == line, done.stderr[-2000:]
        assert "Traceback" not in done.stderr
        assert double.asked == []


# ---------------------------------------------------------------- docs/evaluate.md, run as written

DOCS = PROJECT_ROOT / "docs" / "evaluate.md"
SECTION = "## Two commands: inspect and lm-eval against vLLM"
MARKED = re.compile(r"<!-- docs-test: (?P<kind>[\w-]+) (?P<name>[\w-]+) -->\n+```bash\n(?P<body>.*?)```", re.S)


def test_the_two_commands_of_docs_evaluate_run_as_written(harness_releases, tmp_path):
    """Every block of the page's walk-through, copied from the page: `vllm serve` stands in for a GPU machine and is
    replaced by the recorded-answers server (its URL for http://gpu-box:8000/v1), the viewer gets a free port; the
    commands run beside a copy of the CaseFacts release where the nightly writes it. docs/releases.md shows the same
    two."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ", 1)]
    found = [m.groupdict() for m in MARKED.finditer(section)]
    assert len(found) == section.count("```") // 2, "a fenced block of the walk-through has no docs-test marker"
    assert [(b["kind"], b["name"]) for b in found] == [("stand-in", "vllm"), ("run", "inspect"), ("run", "lm-eval"),
                                                      ("serve", "inspect-view")]
    releases = read("docs/releases.md")                # "Evaluating a model on a release"
    for block in found[1:3]:
        assert block["body"].splitlines()[-1] in releases, f"docs/releases.md lacks the {block['name']} command"
    shutil.copytree(harness_releases.releases["casefacts"], tmp_path / "data" / "caseforge-releases" / "casefacts")
    port = free_port()
    with ChatServerDouble(any_answer, models=("qwen2.5-7b",)) as double:       # the served name docs/evaluate.md uses
        env = harness_env(tmp_path)
        for block in found[1:3]:
            script = block["body"].replace("http://gpu-box:8000/v1", double.base_url)
            done = timed(f"docs/evaluate.md: {block['name']}", ["bash", "-c", script], tmp_path, env)
            assert done.returncode == 0, done.stderr[-3000:]
        assert len(inspect_log(tmp_path / "evals" / "inspect")["samples"]) == 2
        metrics, samples = lm_eval_results(tmp_path / "evals" / "lm_eval")
        assert len(samples["caseforge_casefacts"]) == 2 and "verdict_accuracy" in metrics["caseforge_casefacts"]
    # the harness ran in place: the release is still whole, and still caseforge's to replace at the next nightly
    release = tmp_path / "data" / "caseforge-releases" / "casefacts"
    assert verify_release(release) == [] and not_our_release(release, "casefacts") is None
    viewer = subprocess.Popen(["bash", "-c", found[3]["body"].replace("--port 7575", f"--port {port}")], cwd=tmp_path,
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert viewer.poll() is None, "inspect view ended"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "inspect view did not serve within 120 s"
            time.sleep(0.5)
    finally:
        stop_process_group(viewer, 10)
