"""`openai`: any OpenAI-compatible /v1/chat/completions endpoint (vllm serve, llama_cpp.server, OpenAI).

Requests are sent concurrently (asyncio + httpx), never more than `concurrency` in flight: one
worker per connection takes the next request as soon as its last one is answered, and answers are
streamed back to the job as they finish (`complete_stream`).
429, 5xx, timeouts, connection errors and unreadable bodies are retried with exponential backoff
and jitter (Retry-After honoured). Whatever still fails becomes Completion(error=...) for that one
request; the rest are kept.

Structured output styles:
  "vllm"     top-level `structured_outputs: {"json": schema}` (what `extra_body` sends to vllm serve)
  "openai"   `response_format: {"type": "json_schema", "json_schema": {...}}` (OpenAI proper)
  "llamacpp" `response_format: {"type": "json_object", "schema": schema}` (llama_cpp.server)
  "none"     no constraint; the job's parser still validates the answer
"""
from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import os
import queue
import random
import ssl
import threading
import time
import urllib.request
from collections.abc import Iterator

import certifi
import httpx

from caseforge.llm.types import Completion, LLMRequest

STRUCTURED_STYLES = ("vllm", "openai", "llamacpp", "none")
RETRY_STATUSES = {408, 425, 429, 500, 502, 503, 504}
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
LOOPBACK_HOSTS = {"localhost", "::1"}


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after_s: float | None = None):
        super().__init__(reason)
        self.retry_after_s = retry_after_s


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After is either delta-seconds or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def proxy_for(url: httpx.URL) -> str | None:
    """The proxy the environment (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY) names for this URL;
    never one for a server on this machine."""
    proxies = urllib.request.getproxies()
    if not proxies or url.host in LOOPBACK_HOSTS or url.host.startswith("127.") or urllib.request.proxy_bypass(url.host):
        return None
    return proxies.get(url.scheme) or proxies.get("all")


class OpenAIBackend:
    name = "openai"

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 concurrency: int = 32, timeout_s: float = 60.0, max_retries: int = 5,
                 structured: str = "vllm", batch_size: int | None = None, backoff_base_s: float = 0.5,
                 backoff_max_s: float = 30.0, sleep=None, transport: httpx.AsyncBaseTransport | None = None,
                 **_ignored):
        if structured not in STRUCTURED_STYLES:
            raise ValueError(f"structured must be one of {', '.join(STRUCTURED_STYLES)}, got {structured!r}")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.model = model
        self.base_url = (base_url or os.environ.get("CASEFORGE_OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        self.api_key = api_key or os.environ.get("CASEFORGE_OPENAI_API_KEY")
        self.concurrency = int(concurrency)
        self.timeout_s = float(timeout_s)
        self.max_retries = int(max_retries)
        self.structured = structured
        # Big enough to keep every connection busy for many round trips between cache writes.
        self.batch_size = int(batch_size or max(256, 32 * self.concurrency))
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self._sleep = sleep or asyncio.sleep
        self._transport = transport
        self._ssl_context: ssl.SSLContext | None = None
        self._completions_url = httpx.URL(self.base_url + "/chat/completions")
        self._headers = {"content-type": "application/json"}
        if self.api_key:
            self._headers["authorization"] = f"Bearer {self.api_key}"
        self._extensions = {"timeout": httpx.Timeout(self.timeout_s).as_dict()}

    # -- request body -------------------------------------------------------------------------
    def body_for(self, request: LLMRequest) -> dict:
        params = request.params
        body = {"model": self.model, "messages": request.messages, "temperature": params.temperature,
                "top_p": params.top_p, "max_tokens": params.max_tokens}
        if params.seed is not None:
            body["seed"] = params.seed
        schema = request.json_schema
        if schema is not None:
            if self.structured == "vllm":
                body["structured_outputs"] = {"json": schema}
            elif self.structured == "openai":
                body["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": str(schema.get("title") or "output")[:64], "schema": schema, "strict": False}}
            elif self.structured == "llamacpp":
                body["response_format"] = {"type": "json_object", "schema": schema}
        return body

    # -- the batch ----------------------------------------------------------------------------
    def complete_batch(self, requests: list[LLMRequest]) -> list[Completion]:
        completions: list[Completion | None] = [None] * len(requests)
        for index, completion in self.complete_stream(requests):
            completions[index] = completion
        return completions

    def complete_stream(self, requests: list[LLMRequest]) -> Iterator[tuple[int, Completion]]:
        """(index, completion) as each request finishes.

        The event loop runs in its own thread, so the caller parses and saves answers while the
        rest are in flight. Closing the iterator early cancels what is still in flight.
        """
        if not requests:
            return
        if self._ssl_context is None:   # loading the CA bundle costs ~10 ms: once per backend, not per client
            self._ssl_context = ssl.create_default_context(cafile=certifi.where())
        finished: queue.SimpleQueue = queue.SimpleQueue()
        control = _LoopControl()
        thread = threading.Thread(target=self._run_loop, args=(requests, finished, control),
                                  name="caseforge-openai-backend", daemon=True)
        thread.start()
        try:
            for _ in range(len(requests)):
                index, item = finished.get()
                if index is None:   # the loop itself broke: a bug, not a request's problem
                    raise item
                yield index, item
        finally:
            control.stop()
            thread.join()

    def _run_loop(self, requests, finished: queue.SimpleQueue, control: "_LoopControl") -> None:
        try:
            asyncio.run(self._send_all(requests, finished, control))
        except asyncio.CancelledError:
            pass
        except BaseException as exc:   # noqa: BLE001 - handed to the consuming thread, which raises it
            finished.put((None, exc))

    async def _send_all(self, requests, finished: queue.SimpleQueue, control: "_LoopControl") -> None:
        if not control.attach(asyncio.get_running_loop(), asyncio.current_task()):
            return
        # One worker per connection, each with its own single-connection transport. Requests go to the
        # transport directly: httpx's client layer (URL merging, cookies, auth and redirect hooks) and
        # a shared pool scanning dozens of connections cost more CPU per call than the rest of the
        # layer together, and that CPU shows up as latency at a few hundred requests per second.
        todo = iter(enumerate(requests))    # shared by the workers: each request goes to exactly one
        async with contextlib.AsyncExitStack() as stack:
            proxy = proxy_for(self._completions_url)
            transports = [self._transport or await stack.enter_async_context(httpx.AsyncHTTPTransport(
                verify=self._ssl_context, proxy=proxy,
                limits=httpx.Limits(max_connections=1, max_keepalive_connections=1)))
                for _ in range(min(self.concurrency, len(requests)))]

            async def work(transport: httpx.AsyncBaseTransport) -> None:
                for index, request in todo:
                    finished.put((index, await self._complete_one(transport, request)))

            await asyncio.gather(*(work(transport) for transport in transports))

    async def _post(self, transport: httpx.AsyncBaseTransport, payload: bytes) -> httpx.Response:
        request = httpx.Request("POST", self._completions_url, headers=self._headers, content=payload,
                                extensions=self._extensions)
        response = await transport.handle_async_request(request)
        try:
            await response.aread()
        finally:
            await response.aclose()
        return response

    async def _complete_one(self, transport: httpx.AsyncBaseTransport, request: LLMRequest) -> Completion:
        started = time.perf_counter()
        payload = json.dumps(self.body_for(request), ensure_ascii=False).encode("utf-8")
        last_reason = "no attempt made"
        for attempt in range(self.max_retries + 1):
            sent_at = time.perf_counter()
            try:
                response = await self._post(transport, payload)
                return self._completion_from(response, time.perf_counter() - sent_at)
            except _Retryable as exc:
                last_reason, wait = str(exc), exc.retry_after_s
            except httpx.TimeoutException as exc:
                last_reason, wait = f"timed out after {self.timeout_s:g}s ({type(exc).__name__})", None
            except httpx.TransportError as exc:
                last_reason, wait = f"connection problem: {type(exc).__name__}: {exc}", None
            except _Final as exc:   # a 4xx (a prompt too long for the model, a malformed request): not asked again
                return Completion(text=exc.text, latency_s=time.perf_counter() - sent_at, error=str(exc),
                                  retryable=False)
            if attempt < self.max_retries:   # this connection waits too: a struggling server gets less load
                await self._sleep(wait if wait is not None else self._backoff(attempt))
        return Completion(text=None, latency_s=time.perf_counter() - started,
                          error=f"gave up after {self.max_retries + 1} attempts: {last_reason}")

    def _backoff(self, attempt: int) -> float:
        return min(self.backoff_max_s, self.backoff_base_s * 2 ** attempt) * (0.5 + random.random())

    def _completion_from(self, response: httpx.Response, latency_s: float) -> Completion:
        status = response.status_code
        if status in RETRY_STATUSES:
            raise _Retryable(f"HTTP {status}: {response.text[:200]}",
                             retry_after_seconds(response.headers.get("retry-after")))
        if status >= 400:
            raise _Final(f"HTTP {status}: {response.text[:300]}")
        try:
            data = response.json()
        except ValueError:
            raise _Retryable(f"HTTP {status} with a body that is not JSON: {response.text[:120]!r}") from None
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise _Retryable(f"response without choices[0].message: {str(data)[:160]}") from None
        usage = data.get("usage") or {}
        error = None
        if text is None:
            error = f"empty message (finish_reason={choice.get('finish_reason')})"
        return Completion(text=text, prompt_tokens=usage.get("prompt_tokens"),
                          completion_tokens=usage.get("completion_tokens"), latency_s=latency_s, error=error,
                          finish_reason=choice.get("finish_reason"))


class _Final(Exception):
    """A problem retrying will not fix (e.g. 400: the request itself is wrong)."""

    def __init__(self, reason: str, text: str | None = None):
        super().__init__(reason)
        self.text = text



class _LoopControl:
    """Lets the consuming thread cancel the backend's event loop, whenever it has started."""

    def __init__(self):
        self._lock = threading.Lock()
        self._stopped = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task | None = None

    def attach(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task) -> bool:
        with self._lock:
            if self._stopped:
                return False
            self._loop, self._task = loop, task
            return True

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            loop, task = self._loop, self._task
        if loop is not None:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:   # the loop has already finished and closed
                pass
