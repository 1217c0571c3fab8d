"""docs/llm.md, "Serving a model with vLLM and pointing caseforge at it", run as written: every command and
settings block of the walk-through is copied from the page (blocks marked `<!-- docs-test: ... -->`), so the
docs cannot drift from the code.

What stands in for what a GPU machine has, and nothing else, is replaced (REPLACED below): llama_cpp.server
with the two packaged models for `vllm serve` (the page's own *CPU stand-in* blocks), free loopback ports for
the GPU machines, the packaged models' names for Qwen and Gemma, and `structured = "llamacpp"` (how
llama_cpp.server reads a JSON schema) for `structured = "vllm"`. The small models cannot write a benchmark: a
build may end with the content gates refusing what they wrote (exit 1), never with an error (exit 2)."""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import httpx
import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
DOCS = PROJECT_ROOT / "docs" / "llm.md"
SECTION = "## Serving a model with vLLM and pointing caseforge at it"
MARKED = re.compile(r"<!-- docs-test: (?P<kind>[\w-]+)(?: (?P<name>[\w-]+))? -->\n+```(?P<lang>\w*)\n(?P<body>.*?)```",
                    re.S)
KEY = "walkthrough-key"

pytestmark = [pytest.mark.samples, pytest.mark.slow]


def blocks(text: str) -> list[dict]:
    """The marked fenced blocks of the walk-through, in order; every fenced block of the section is marked."""
    section = text[text.index(SECTION):]
    section = section[:section.index("\n## ", 1)]
    found = [m.groupdict() for m in MARKED.finditer(section)]
    assert len(found) == section.count("```") // 2, "a fenced block of the walk-through has no docs-test marker"
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def replaced(text: str, ports: dict[str, int]) -> str:
    """The page's text with the GPU machines' names and models replaced by the loopback stand-ins."""
    table = {
        "http://gpu-box:8000/v1": f"http://127.0.0.1:{ports['generator']}/v1",
        "http://gpu-box-2:8000/v1": f"http://127.0.0.1:{ports['validator']}/v1",
        "--port 8000": f"--port {ports['generator']}",
        "--port 8001": f"--port {ports['validator']}",
        "Qwen/Qwen2.5-7B-Instruct": "smollm2-135m-instruct",
        "google/gemma-3-27b-it": "gemma-3-270m",
        'structured = "vllm"': 'structured = "llamacpp"',
    }
    for old, new in table.items():
        text = text.replace(old, new)
    return text


def commands(body: str) -> list[str]:
    """The shell commands of a block, continuation lines joined."""
    return [line.strip() for line in body.replace("\\\n", " ").splitlines() if line.strip()
            and not line.strip().startswith("#")]


def chat_requests(log: Path) -> int:
    return log.read_text(errors="replace").count("POST /v1/chat/completions")


class Walkthrough:
    def __init__(self, work: Path, env: dict):
        self.work, self.env = work, env
        self.exports: list[str] = []
        self.servers: list[subprocess.Popen] = []

    def run(self, command: str, timeout: float = 900) -> subprocess.CompletedProcess:
        if command.startswith("export "):
            self.exports.append(command)
            return subprocess.CompletedProcess(command, 0, "", "")
        script = "\n".join(self.exports + [command])
        return subprocess.run(["bash", "-c", script], cwd=self.work, env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def serve(self, body: str, name: str, port: int) -> Path:
        log = self.work / f"{name}.log"
        [command] = commands(body)
        self.servers.append(subprocess.Popen(["bash", "-c", "exec " + command], cwd=self.work, env=self.env,
                                             stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert self.servers[-1].poll() is None, f"{name} server ended:\n{log.read_text()[-3000:]}"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2,
                             headers={"authorization": f"Bearer {KEY}"}).status_code == 200:
                    return log
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"{name} server not up in 120 s:\n{log.read_text()[-3000:]}")

    def stop(self) -> None:
        for server in self.servers:
            try:
                os.killpg(server.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            server.wait(timeout=30)


@pytest.fixture
def walkthrough(tmp_path, samples_dir, shared_server_cli_env):
    env = {k: v for k, v in shared_server_cli_env.items()
           if not k.startswith(("CASEFORGE_LLM_", "CASEFORGE_OPENAI_", "CASEFORGE_CONFIG"))}
    env.update(KEY=KEY, CASEFORGE_SAMPLES=str(samples_dir),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    one = Walkthrough(tmp_path, env)
    yield one
    one.stop()


def test_the_serving_walkthrough_of_docs_llm_runs_as_written(walkthrough):
    ports = {"generator": free_port(), "validator": free_port()}
    found = blocks(replaced(DOCS.read_text(encoding="utf-8"), ports))
    kinds = [(b["kind"], b["name"]) for b in found]
    assert kinds == [("gpu-only", None), ("serve-generator", None), ("settings", "one-server"), ("run", "one-server"),
                     ("gpu-only", None), ("serve-validator", None), ("settings", "two-servers"),
                     ("run", "two-servers")], kinds
    by_kind = {(b["kind"], b["name"]): b["body"] for b in found}
    work = walkthrough.work

    # 1. serve; 2. one server for every role
    generator_log = walkthrough.serve(by_kind[("serve-generator", None)], "generator", ports["generator"])
    (work / "caseforge.toml").write_text(by_kind[("settings", "one-server")])
    outcomes = {}
    for command in commands(by_kind[("run", "one-server")]):
        done = walkthrough.run(command)
        outcomes[command.split()[1] if command.startswith("caseforge") else command] = done
        context = f"{command}\nexit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        if command.startswith("caseforge build"):
            assert done.returncode in (0, 1), context         # 1: the gates refused the small model's writing
            assert "Traceback" not in done.stderr, context
        else:
            assert done.returncode == 0, context
    check = outcomes["llm"]
    assert "casefacts.factuality" in check.stdout and f"127.0.0.1:{ports['generator']}" in check.stdout
    assert "warning: build aquaechr: the judge smollm2-135m-instruct is of the smollm family" in check.stderr
    asked_in_step_2 = chat_requests(generator_log)
    assert asked_in_step_2 >= 2                            # the check's probe and the build's requests

    db = work / "data" / "caseforge.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        generated = con.execute("SELECT identity, created_at, backend, model FROM ops.llm_calls "
                                "WHERE step = 'casefacts.generate'").fetchall()
    assert generated and {row[2:] for row in generated} == {("openai", "smollm2-135m-instruct")}

    # 3. separate generator and validator servers
    validator_log = walkthrough.serve(by_kind[("serve-validator", None)], "validator", ports["validator"])
    (work / "caseforge.toml").write_text(by_kind[("settings", "two-servers")])
    for command in commands(by_kind[("run", "two-servers")]):
        done = walkthrough.run(command)
        context = f"{command}\nexit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert done.returncode in ((0, 1) if command.startswith("caseforge build") else (0,)), context
        assert "Traceback" not in done.stderr, context
        if command == "caseforge llm check":
            assert "warning:" not in done.stderr, context      # two families now
            assert f"127.0.0.1:{ports['validator']}" in done.stdout
    assert chat_requests(validator_log) >= 1
    # the generator's answers were cached under the model's name: the build asked the generator nothing again
    with duckdb.connect(str(db), read_only=True) as con:
        again = con.execute("SELECT identity, created_at, backend, model FROM ops.llm_calls "
                            "WHERE step = 'casefacts.generate'").fetchall()
    assert sorted(again) == sorted(generated)
    assert chat_requests(generator_log) == asked_in_step_2 + 1      # only the check's probe

