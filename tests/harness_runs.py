"""Running a release's harness tasks from the tests: inspect_ai and lm-evaluation-harness as their commands, in
.venv-harness (the harnesses of requirements-harness.lock and no caseforge: `make setup-harness`), with an environment
that holds nothing of caseforge's, and reading what they logged. Every command's wall time is kept in TIMINGS and
printed at the end of a module that uses `timings`."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
HARNESS_BIN = PROJECT_ROOT / ".venv-harness" / "bin"
DATASETS = ("casefacts", "aquaechr", "casegen")
TIMINGS: dict[str, float] = {}


def require_harness_venv() -> None:
    """Skip without .venv-harness; under CI (CI=true), which installs it, fail instead."""
    if not (HARNESS_BIN / "inspect").exists() or not (HARNESS_BIN / "lm-eval").exists():
        message = f"no harness venv at {HARNESS_BIN.parent} (make setup-harness)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message + "; CI installs it", pytrace=False)
        pytest.skip(message)


@pytest.fixture(scope="module")
def timings():
    """The wall time of every harness command of the module, printed at its end (pytest -s) for the lead's note."""
    yield TIMINGS
    print("\n" + "\n".join(f"{seconds:7.1f} s  {label}" for label, seconds in TIMINGS.items()))


def harness_env(work: Path, base_url: str | None = None) -> dict:
    """A child's environment with the harness venv first and nothing of caseforge's (its PYTHONPATH, settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CASEFORGE_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(PATH=f"{HARNESS_BIN}{os.pathsep}{env.get('PATH', '')}", HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1",
               HF_HOME=str(work / "hf"), INSPECT_LOG_DIR=str(work / "inspect_logs"), INSPECT_DISPLAY="none",
               LOCAL_API_KEY="x")
    if base_url:
        env["LOCAL_BASE_URL"] = base_url
    return env


def timed(label: str, command: list[str], cwd: Path, env: dict, timeout: float = 900) -> subprocess.CompletedProcess:
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    TIMINGS[label] = round(time.monotonic() - started, 1)
    return done


def inspect_eval(release: Path, work: Path, base_url: str, model: str, *args: str, label: str):
    logs = work / f"inspect_{label.replace(' ', '_')}"
    done = timed(label, [str(HARNESS_BIN / "inspect"), "eval", "harness/inspect_task.py", "--model",
                         f"openai-api/local/{model}", "--log-dir", str(logs), *args],
                 release, harness_env(work, base_url))
    return done, logs


def inspect_log(logs: Path) -> dict:
    """The run's log, as `inspect log dump` gives it (the .eval file is a zip inspect reads)."""
    [path] = list(logs.glob("*.eval"))
    dumped = subprocess.run([str(HARNESS_BIN / "inspect"), "log", "dump", str(path)], capture_output=True, text=True,
                            timeout=300, env=harness_env(logs))
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    return json.loads(dumped.stdout)


def inspect_metrics(log: dict) -> dict[str, float]:
    """metric name → value: a score's mean under its own name, a breakdown's entries under theirs, `failed` as
    n_failed."""
    found = {}
    for score in log["results"]["scores"]:
        for metric in score["metrics"].values():
            name = {"mean": score["name"], "total": "n_failed"}.get(metric["name"], metric["name"])
            found[name] = metric["value"]
    return found


def lm_eval_folder(releases: dict[str, Path], work: Path) -> Path:
    """One folder holding the three releases' lm-eval task files (links to them: lm-eval does not enter a linked
    folder, and utils.py finds its release by the file a link resolves to), for one lm-eval command."""
    folder = work / "lm_eval_tasks"
    for name, release in releases.items():
        (folder / name).mkdir(parents=True, exist_ok=True)
        for path in (release / "harness" / "lm_eval").iterdir():
            if not (folder / name / path.name).exists():
                (folder / name / path.name).symlink_to(path)
    return folder


def lm_eval(tasks_folder: Path, work: Path, base_url: str, model: str, *args: str, label: str,
            tasks: str = ",".join(f"caseforge_{d}" for d in DATASETS)):
    out = work / f"lm_eval_{label.replace(' ', '_')}"
    done = timed(label, [str(HARNESS_BIN / "lm-eval"), "run", "--include_path", str(tasks_folder), "--tasks", tasks,
                         "--model", "local-chat-completions", "--model_args",
                         f"base_url={base_url}/chat/completions,model={model},tokenizer_backend=None",
                         "--apply_chat_template", "--output_path", str(out), "--log_samples", *args],
                 work, harness_env(work))
    return done, out


def lm_eval_results(out: Path) -> tuple[dict, dict[str, list[dict]]]:
    """(task → metric → value, task → logged samples)."""
    [results_file] = list(out.rglob("results_*.json"))
    results = json.loads(results_file.read_text())["results"]
    metrics = {task: {key.split(",")[0]: value for key, value in found.items() if "," in key and "stderr" not in key}
               for task, found in results.items()}
    samples = {}
    for path in out.rglob("samples_*.jsonl"):
        task = path.name[len("samples_"):].rsplit("_", 1)[0]
        samples[task] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return metrics, samples


def positions(release: Path, ids: list[str]) -> list[int]:
    """Where the samples `ids` stand among the release's CaseGen samples, as lm-eval's --samples counts them (the
    release's own caseforge_harness orders them; pyarrow and nltk are in caseforge's venv too)."""
    spec = importlib.util.spec_from_file_location(f"caseforge_harness_{release.name}",
                                                  release / "harness" / "caseforge_harness.py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    order = [s["id"] for s in module.load_samples(module.open_release(release / "harness"), "generate")]
    return sorted(order.index(i) for i in ids)


def dated_ids(release: Path, split: str, id_column: str, date_column: str, after: str) -> list[str]:
    """The ids of the rows of data/<split>.parquet dated after `after`, read straight from the data."""
    rows = pq.read_table(release / "data" / f"{split}.parquet").to_pylist()
    return sorted(str(r[id_column]) for r in rows if r[date_column] is not None and str(r[date_column])[:10] > after)



def any_answer(messages: list[dict]) -> str:
    """Test double of a model that answers every prompt with something each scorer reads."""
    text = messages[-1]["content"]
    if "Statement:" in text:
        return '{"verdict": "SUPPORTED", "cases": []}'
    if "待评价" in text:
        return '{"分析": "与参考文本基本一致。", "总体评分": 7}'
    if "任务" in text:
        return "经审理查明，双方签订合同后被告未按约履行。"
    return '{"answer": "The Court applies a strict test [Doc 1]."}'
