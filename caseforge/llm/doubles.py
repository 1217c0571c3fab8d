"""Test doubles for the LLM layer: a scripted OpenAI-compatible server on loopback.

`ScriptedOpenAIServerDouble` speaks just enough HTTP/1.1 (keep-alive, Content-Length) to stand in
for /v1/chat/completions and /v1/models. It serves the model names `models` lists (as /v1/models says, and as
each answer's `model` field says unless the script's reply names another). A script decides each answer;
the double records every request body and the most requests it ever had in flight, so tests can check what
the client really sent. A reply can also misbehave as hostile endpoints do: a body fed a byte at a time
(`drip_s`) or a connection cut mid-body (`cut_after`).
It is for tests and benchmarks only — never a model.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import threading
from dataclasses import dataclass, field


@dataclass
class ScriptedReply:
    status: int = 200
    body: bytes | str | dict | list | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drip_s: float = 0.0              # the body is sent one byte at a time, this long apart
    cut_after: int | None = None     # the connection is closed after this many bytes of the body


def chat_reply(content: str, prompt_tokens: int = 5, completion_tokens: int = 3, **extra) -> ScriptedReply:
    """A well-formed chat completion whose message content is `content` (its `model`: the one asked for)."""
    return ScriptedReply(200, {
        "id": "double", "object": "chat.completion",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }, **extra)


def echo_last_user_message(body: dict, call_number: int) -> ScriptedReply:
    return chat_reply(json.dumps({"echo": body["messages"][-1]["content"]}))


DOUBLE_MODEL = "double-model"       # the name the double serves unless told others

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


class ScriptedOpenAIServerDouble:
    """Loopback server; `script(body, call_number)` → ScriptedReply (call_number counts from 1)."""

    def __init__(self, script=echo_last_user_message, host: str = "127.0.0.1", port: int = 0,
                 models: tuple[str, ...] = (DOUBLE_MODEL,)):
        self.script = script
        self.models = tuple(models)
        self.host = host
        self.port = port
        self.bodies: list[dict] = []
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._connections: set[asyncio.Task] = set()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def reset(self) -> None:
        self.bodies.clear()
        self.calls = self.max_in_flight = 0

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections.add(asyncio.current_task())
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, v in
                           (line.split(":", 1) for line in lines[1:] if ":" in line)}
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                reply = await self._reply(method, path, raw)
                body = reply.body
                if isinstance(body, (dict, list)):
                    body = json.dumps(body).encode()
                elif isinstance(body, str):
                    body = body.encode()
                body = body or b""
                extra = "".join(f"{k}: {v}\r\n" for k, v in reply.headers.items())
                writer.write(
                    f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}\r\n"
                    f"content-type: application/json\r\ncontent-length: {len(body)}\r\n{extra}\r\n".encode())
                if reply.cut_after is not None:
                    writer.write(body[:reply.cut_after])
                    await writer.drain()
                    return
                if reply.drip_s:
                    for index in range(len(body)):
                        writer.write(body[index:index + 1])
                        await writer.drain()
                        await asyncio.sleep(reply.drip_s)
                else:
                    writer.write(body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, asyncio.CancelledError):
            pass
        finally:
            self._connections.discard(asyncio.current_task())
            writer.close()

    async def _reply(self, method: str, path: str, raw: bytes) -> ScriptedReply:
        if method == "GET" and path.rstrip("/").endswith("/models"):
            return ScriptedReply(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]})
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            return ScriptedReply(404, {"error": f"no route {method} {path}"})
        self.calls += 1
        number = self.calls
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            body = json.loads(raw)
            self.bodies.append(body)
            reply = self.script(body, number)
            if isinstance(reply.body, dict) and "choices" in reply.body and "model" not in reply.body:
                reply = ScriptedReply(**{**reply.__dict__, "body": {**reply.body, "model": body.get("model")}})
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
            return reply
        finally:
            self.in_flight -= 1

    def start(self) -> "ScriptedOpenAIServerDouble":
        self._thread = threading.Thread(target=self._run, name="scripted-openai-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("scripted OpenAI server double did not start")
        return self

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, self.host, self.port, backlog=1024))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def stop(self) -> None:
        if self._loop is None:
            return
        async def _close():
            self._server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)
        asyncio.run_coroutine_threadsafe(_close(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def fixed_latency_script(latency_s: float):
    def script(body: dict, call_number: int) -> ScriptedReply:
        return chat_reply(json.dumps({"echo": body["messages"][-1]["content"][:40]}), delay_s=latency_s)
    return script


def main() -> None:
    """Serve a fixed-latency double in the foreground (used by bench/llm_dispatch.py)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency-s", type=float, default=0.1)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--models", default=DOUBLE_MODEL, help="comma-separated model names it serves")
    args = parser.parse_args()
    server = ScriptedOpenAIServerDouble(fixed_latency_script(args.latency_s), port=args.port,
                                        models=tuple(args.models.split(","))).start()
    print(server.port, flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
