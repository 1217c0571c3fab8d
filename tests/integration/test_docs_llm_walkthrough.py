"""docs/llm.md, "Serving a model with vLLM and pointing caseforge at it", run as written: every command and
settings block of the walk-through is copied from the page (blocks marked `<!-- docs-test: ... -->`), so the
docs cannot drift from the code.

What stands in for what a GPU machine has, and nothing else, is replaced (`replaced` below): llama_cpp.server
with the two packaged models for `vllm serve` (the page's own *CPU stand-in* blocks), free loopback ports for
the GPU machines, the names the stand-ins serve for Qwen and Gemma, and `structured = "llamacpp"` (how
llama_cpp.server reads a JSON schema) for `structured = "vllm"`. The commands run in a folder of their own whose
`.venv` is the checkout's (the page is run in the checkout after `make setup`), with no virtual environment on
PATH and no variable the page does not define. The small models cannot write a benchmark: a build may end with
the content gates refusing what they wrote (exit 1), never with an error (exit 2)."""
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
# a hang guard, not a budget: two real model servers and their builds on 2 shared cores took 217-301 s in CI
pytestmark = [pytest.mark.samples, pytest.mark.slow, pytest.mark.timeout(1200)]


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
        "Qwen/Qwen2.5-7B-Instruct": "HuggingFaceTB/SmolLM2-135M-Instruct",
        "google/gemma-3-27b-it": "google/gemma-3-270m-it",
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
        self.servers: list[subprocess.Popen] = []

    def run(self, command: str, timeout: float = 900) -> subprocess.CompletedProcess:
        """One command of the page in bash; an `export` is run once and its variables kept for the commands after
        it, as in the reader's shell."""
        if command.startswith("export "):
            done = subprocess.run(["bash", "-c", f"{command}\nenv -0"], cwd=self.work, env=self.env,
                                  capture_output=True, text=True, timeout=timeout)
            assert done.returncode == 0, done.stderr
            self.env.update(item.split("=", 1) for item in done.stdout.split("\0") if "=" in item)
            return done
        return subprocess.run(["bash", "-c", command], cwd=self.work, env=self.env, capture_output=True, text=True,
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
                             headers={"authorization": f"Bearer {self.env['KEY']}"}).status_code == 200:
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
           if not k.startswith(("CASEFORGE_LLM_", "CASEFORGE_OPENAI_", "CASEFORGE_CONFIG", "CASEFORGE_DB", "KEY",
                                "VIRTUAL_ENV"))}
    venv_bin = str(Path(sys.executable).parent)
    env.update(CASEFORGE_SAMPLES=str(samples_dir),
               PATH=os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin))
    (tmp_path / ".venv").symlink_to(PROJECT_ROOT / ".venv")          # the checkout's, made by `make setup`
    one = Walkthrough(tmp_path, env)
    yield one
    one.stop()


def test_the_serving_walkthrough_of_docs_llm_runs_as_written(walkthrough):
    from caseforge.settings import read_settings

    ports = {"generator": free_port(), "validator": free_port()}
    found = blocks(replaced(DOCS.read_text(encoding="utf-8"), ports))
    kinds = [(b["kind"], b["name"]) for b in found]
    assert kinds == [("key", None), ("gpu-only", None), ("serve-generator", None), ("settings", "one-server"),
                     ("run", "one-server"), ("gpu-only", None), ("serve-validator", None),
                     ("settings", "two-servers"), ("run", "two-servers")], kinds
    by_kind = {(b["kind"], b["name"]): b["body"] for b in found}
    work = walkthrough.work
    generator = "HuggingFaceTB/SmolLM2-135M-Instruct"
    # `make run` caches the in-process models' answers under their own names: the page's build must not hit them
    assert generator not in read_settings().file.llm.models["llamacpp"].values()

    # 0. the key; 1. serve; 2. one server for every role
    [key] = commands(by_kind[("key", None)])
    assert walkthrough.run(key).returncode == 0 and len(walkthrough.env["KEY"]) >= 24
    generator_log = walkthrough.serve(by_kind[("serve-generator", None)], "generator", ports["generator"])
    (work / "caseforge.toml").write_text(by_kind[("settings", "one-server")])
    outcomes = {}
    for command in commands(by_kind[("run", "one-server")]):
        done = walkthrough.run(command)
        outcomes[command] = done
        context = f"{command}\nexit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr, context
        if ".venv/bin/caseforge build" in command:
            assert done.returncode in (0, 1), context         # 1: the gates refused the small model's writing
        else:
            assert done.returncode == 0, context
    check = outcomes[".venv/bin/caseforge llm check"]
    assert "casefacts.factuality" in check.stdout and f"127.0.0.1:{ports['generator']}" in check.stdout
    assert "warning: build aquaechr: the judge HuggingFaceTB/SmolLM2-135M-Instruct is of the smollm family" \
        in check.stderr
    stats = outcomes[".venv/bin/caseforge llm stats --step casefacts.generate"]
    assert generator in stats.stdout

    db = work / "data" / "caseforge.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        generated = con.execute("SELECT identity, created_at, backend, model, served_model FROM ops.llm_calls "
                                "WHERE step = 'casefacts.generate'").fetchall()
        answered_in_step_2 = con.execute("SELECT sum(attempts) FROM ops.llm_calls").fetchone()[0]
    # answered by the server, not a cache: recorded as served by the name the server gave
    assert generated and {row[2:] for row in generated} == {("openai", generator, generator)}
    asked_in_step_2 = chat_requests(generator_log)
    assert asked_in_step_2 >= 2 + answered_in_step_2       # the check's two probes and every attempt of the build

    # 3. separate generator and validator servers
    validator_log = walkthrough.serve(by_kind[("serve-validator", None)], "validator", ports["validator"])
    (work / "caseforge.toml").write_text(by_kind[("settings", "two-servers")])
    for command in commands(by_kind[("run", "two-servers")]):
        done = walkthrough.run(command)
        context = f"{command}\nexit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        assert done.returncode in ((0, 1) if "caseforge build" in command else (0,)), context
        assert "Traceback" not in done.stderr, context
        if command == ".venv/bin/caseforge llm check":
            assert "warning:" not in done.stderr, context      # two families now
            assert f"127.0.0.1:{ports['validator']}" in done.stdout
    assert chat_requests(validator_log) >= 2
    # the generator's answers were cached under the model's name: the build asked the generator nothing again
    with duckdb.connect(str(db), read_only=True) as con:
        again = con.execute("SELECT identity, created_at, backend, model, served_model FROM ops.llm_calls "
                            "WHERE step = 'casefacts.generate'").fetchall()
    assert sorted(again) == sorted(generated)
    assert chat_requests(generator_log) == asked_in_step_2 + 2      # only the check's two probes
