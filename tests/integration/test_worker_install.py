"""`make setup-worker` (requirements-worker.txt at requirements.lock's versions) is enough for a GPU worker whose
shards the `openai` backend answers: in a child process that can import only the distributions those packages
install (and the standard library and caseforge), the worker's modules load and a shard is answered through
s3:// on the real S3-compatible test server (SeaweedFS), against the scripted OpenAI-compatible server double.
llama.cpp and torch are not among them. (The install itself, in a fresh venv, is measured by hand:
docs/deploying.md.)"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent

CHILD = r'''
import importlib.abc, importlib.metadata as md, json, re, sys
wanted = [re.split(r"[<>=\[ ;]", line.strip())[0] for line in open(sys.argv[1]) if line.strip() and not line.startswith("#")]
allowed, todo = set(), [w.lower().replace("_", "-") for w in wanted]
while todo:                                   # the distributions requirements-worker.txt installs
    name = todo.pop()
    if name in allowed:
        continue
    allowed.add(name)
    try:
        requires = md.requires(name) or []
    except md.PackageNotFoundError:
        continue
    for req in requires:
        if "extra ==" in req:
            continue
        todo.append(re.split(r"[<>=!~\[ ;(]", req)[0].lower().replace("_", "-"))
owners = md.packages_distributions()

class OnlyTheWorkersPackages(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        top = fullname.split(".")[0]
        dists = {d.lower().replace("_", "-") for d in owners.get(top, [])}
        if dists and not dists & allowed and top != "caseforge":
            raise ImportError(f"{fullname} is not installed by make setup-worker ({sorted(dists)})")
        return None

sys.meta_path.insert(0, OnlyTheWorkersPackages())
import caseforge.flows.llm_shard, caseforge.runtime.warm_worker   # noqa: E401  (what a GPU worker loads)
from caseforge.llm.doubles import ScriptedOpenAIServerDouble, chat_reply
from caseforge.llm.shards import Shard
from caseforge.llm.types import LLMRequest
from caseforge.llm.worker import answer_shard
from caseforge.settings import read_settings
from caseforge.store import open_store

schema = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 8}}, "required": ["text"]}
with ScriptedOpenAIServerDouble(lambda body, n: chat_reply(json.dumps({"text": "ok"})), models=("m",)) as server:
    store = open_store(sys.argv[2])
    Shard(store, "s-000").write_requests([LLMRequest(key=f"k{i}", messages=[{"role": "user", "content": f"q{i}"}],
                                                     template_id="t", template_sha="s", json_schema=schema)
                                          for i in range(3)])
    print(json.dumps(answer_shard(read_settings(), "demo", store, "s-000", "openai", "m", {"base_url": server.base_url}, 1)))
print(json.dumps(sorted(m for m in ("torch", "llama_cpp", "sklearn", "sentence_transformers", "transformers")
                        if m in sys.modules)))
'''


def test_the_worker_packages_answer_a_shard_without_llama_cpp_or_torch(s3_env, tmp_path):
    requirements = PROJECT_ROOT / "requirements-worker.txt"
    names = [re.split(r"[<>=\[ ;]", line.strip())[0].lower() for line in requirements.read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    locked = {line.split("==")[0].lower() for line in (PROJECT_ROOT / "requirements.lock").read_text().splitlines()}
    assert set(names) <= locked, set(names) - locked                     # every version comes from the lock
    assert not {"llama-cpp-python", "llama_cpp_python", "torch"} & set(names)
    done = subprocess.run([sys.executable, "-c", CHILD, str(requirements), f"s3://{s3_env.bucket}/worker-check"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    counts, heavy = done.stdout.strip().splitlines()[-2:]
    assert '"llm_ok": 3' in counts and heavy == "[]"
