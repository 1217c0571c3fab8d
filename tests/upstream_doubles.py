"""Test double of an upstream web server on loopback, for the fetch layer's hostile cases.

`LoopbackUpstreamDouble` answers each path from a table of routes and records every request it gets, so a
test can prove that a URL was never requested. A route may also be a function of the request's query parameters
(a recorded upstream that answers by what was asked: a date window, a document id). A route's body may be bytes, or an iterable of chunks sent with
chunked transfer encoding, each after an optional pause (a drip-fed or endless body); the bytes it managed to
send before the client hung up are counted per path. Bounded: every connection times out after `socket_timeout_s`.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterable
from urllib.parse import parse_qs


@dataclass
class Route:
    status: int = 200
    body: bytes | Callable[[], Iterable[bytes]] = b""
    headers: dict[str, str] = field(default_factory=dict)
    pause_s: float = 0.0                 # between chunks of an iterable body


class LoopbackUpstreamDouble:
    def __init__(self, routes: dict[str, "Route | Callable[[dict[str, list[str]]], Route]"] | None = None,
                 socket_timeout_s: float = 10.0):
        self.routes = dict(routes or {})
        self.requests: list[str] = []
        self.sent_bytes: dict[str, int] = {}
        double = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = socket_timeout_s

            def do_GET(self):
                double.requests.append(self.path)
                path, _, query = self.path.partition("?")
                double.sent_bytes.setdefault(path, 0)
                route = double.routes.get(path, Route(404, b"no such path"))
                if not isinstance(route, Route):
                    route = route(parse_qs(query))
                self.send_response(route.status)
                for name, value in route.headers.items():
                    self.send_header(name, value)
                try:
                    if isinstance(route.body, bytes):
                        if "Content-Length" not in route.headers:
                            self.send_header("Content-Length", str(len(route.body)))
                        self.end_headers()
                        self.wfile.write(route.body)
                        double.sent_bytes[path] += len(route.body)
                        return
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for chunk in route.body():
                        if route.pause_s:
                            time.sleep(route.pause_s)
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                        self.wfile.flush()
                        double.sent_bytes[path] += len(chunk)
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError, TimeoutError):
                    self.close_connection = True

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="loopback-upstream", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "LoopbackUpstreamDouble":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
