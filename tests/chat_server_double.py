"""ChatServerDouble: a test double of an OpenAI-compatible chat server on loopback, answering from a recorded answer
set. `answer(messages)` gives the reply to a request's messages, or None for a prompt the set has no answer for: the
double then answers 400 with the prompt's first line, so a harness that sends a prompt caseforge would not have sent
fails instead of being scored. Every request's messages are kept (`asked`). It serves the model names in `models`
(its `/v1/models` lists them, each answer names the one asked for) and answers 404 for any other, as vLLM does, so
caseforge's check of the model that served (caseforge.llm.backends.served) sees what it would see on a real server."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


class ChatServerDouble:
    def __init__(self, answer: Callable[[list[dict]], str | None], models: tuple[str, ...] = ("double",)):
        self.answer = answer
        self.models = tuple(models)
        self.asked: list[list[dict]] = []
        self.refused: list[list[dict]] = []
        self.lock = threading.Lock()
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": name, "object": "model"} for name in double.models]})

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if request.get("model") not in double.models:
                    self._send(404, {"error": {"message": f"The model `{request.get('model')}` does not exist.",
                                               "type": "NotFoundError"}})
                    return
                messages = [{"role": m["role"], "content": m["content"]} for m in request["messages"]]
                text = double.answer(messages)
                with double.lock:
                    (double.asked if text is not None else double.refused).append(messages)
                if text is None:
                    first = messages[-1]["content"].splitlines()[0] if messages[-1]["content"] else ""
                    self._send(400, {"error": {"message": f"no recorded answer for this prompt: {first[:200]}",
                                               "type": "invalid_request_error"}})
                    return
                self._send(200, {"id": "double", "object": "chat.completion", "created": 0,
                                 "model": request["model"],
                                 "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                              "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, name="chat-server-double", daemon=True)

    def __enter__(self) -> "ChatServerDouble":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)
