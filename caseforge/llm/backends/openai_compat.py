"""`openai`: any OpenAI-compatible /v1/chat/completions endpoint (vllm serve, llama_cpp.server, OpenAI).

Requests are sent concurrently (asyncio + httpx), never more than `concurrency` in flight: one
worker per connection takes the next request as soon as its last one is answered, and answers are
streamed back to the job as they finish (`complete_stream`).

The endpoint is untrusted. Each attempt has one deadline, `timeout_s`, for connecting, sending and the
whole answer (httpx's timeouts bound each read, so a body fed a byte at a time would never end), and an
answer may weigh at most `max_answer_mb`. A 200 answer must have the chat completion's shape, types
included (choices[0].message.content a string or null, usage counts integers...); anything else is an
answer of the wrong shape. 429, 5xx, timeouts, connection errors and answers of the wrong shape are retried
with exponential backoff and jitter (Retry-After honoured). Whatever still fails becomes
Completion(error=...) for that one request, never an exception; the rest are kept. A failure without an
answer (no connection, a cut or late answer, 429/5xx, a 4xx that is not about the request such as 401 or
404) has `answered=False`: the job does not cache it as the request's answer, so the next run asks again.

What served is checked, not assumed: many servers (llama_cpp.server among them) answer whatever model name they
are asked for. Before its first request a backend reads the endpoint's /v1/models: a model name it does not list
is refused (ServedModelMismatch, one line naming the endpoint, the name configured and the names served) before
anything is sent, and so is an answer whose `model` field names another model (an OpenAI-style dated snapshot,
`gpt-4o` answered as `gpt-4o-2024-08-06`, is the same model). `served_model` declares the name the endpoint
serves the model under when it is not `model` (vllm serve --served-model-name, llama_cpp.server --model_alias, or
a server whose /v1/models lists nothing useful): it is the name sent and expected back, while `model` stays the
name answers are cached and credited under. Each completion carries the name it was served under.

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
import queue
import random
import ssl
import threading
import time
import urllib.request
from collections.abc import Iterator

import certifi
import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from caseforge.llm.backends.served import ServedModelMismatch, described, listed_name, same_model
from caseforge.llm.types import Completion, LLMRequest
from caseforge.stopping import check_stop

__all__ = ["OpenAIBackend", "ServedModelMismatch", "same_model"]

STRUCTURED_STYLES = ("vllm", "openai", "llamacpp", "none")
RETRY_STATUSES = {408, 425, 429, 500, 502, 503, 504}
REQUEST_STATUSES = {400, 413, 422}     # the endpoint refused this request itself: another run would too
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
LOOPBACK_HOSTS = {"localhost", "::1"}
STOP_CHECK_S = 0.2                     # how often a batch waiting for answers looks for a stop request


class _Retryable(Exception):
    """A problem another attempt may not have. `answered`: the endpoint did answer (with the wrong shape)."""

    def __init__(self, reason: str, retry_after_s: float | None = None, answered: bool = False):
        super().__init__(reason)
        self.retry_after_s = retry_after_s
        self.answered = answered


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class ChatMessage(_Strict):
    content: str | None = None


class ChatChoice(_Strict):
    message: ChatMessage
    finish_reason: str | None = None


class ChatUsage(_Strict):
    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)


class ChatCompletion(_Strict):
    """What caseforge reads of an OpenAI chat completion, with the types the API documents."""
    choices: list[ChatChoice] = Field(min_length=1)
    usage: ChatUsage | None = None
    model: str | None = None


def _shape_problem(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "the answer"
    return f"{where}: {first['msg']} (got {repr(first.get('input'))[:60]})" + \
        (f"; {error.error_count() - 1} more problem(s)" if error.error_count() > 1 else "")


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
                 max_answer_mb: float = 16.0, served_model: str | None = None, **_ignored):
        if structured not in STRUCTURED_STYLES:
            raise ValueError(f"structured must be one of {', '.join(STRUCTURED_STYLES)}, got {structured!r}")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.model = model
        self.served_name = str(served_model or model)     # sent as the request's model, and expected back
        self.declared = bool(served_model)
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")     # CASEFORGE_OPENAI_BASE_URL: caseforge.llm.config
        self.api_key = api_key or None
        self.concurrency = int(concurrency)
        self.timeout_s = float(timeout_s)     # per attempt: connect, send and the whole answer
        self.max_answer_bytes = int(float(max_answer_mb) * 1024 * 1024)
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
        self._models_url = httpx.URL(self.base_url + "/models")
        self._listed: str | None = None       # the name /v1/models listed, once checked
        self._headers = {"content-type": "application/json"}
        if self.api_key:
            self._headers["authorization"] = f"Bearer {self.api_key}"
        self._extensions = {"timeout": httpx.Timeout(self.timeout_s).as_dict()}

    # -- request body -------------------------------------------------------------------------
    def body_for(self, request: LLMRequest) -> dict:
        params = request.params
        body = {"model": self.served_name, "messages": request.messages, "temperature": params.temperature,
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
                index, item = _next_finished(finished)
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

            outage = await self._check_served(transports[0])
            if outage is not None:           # nothing is sent: every request is unanswered, asked again next run
                for index, _ in todo:
                    finished.put((index, Completion(text=None, answered=False, error=outage)))
                return

            async def work(transport: httpx.AsyncBaseTransport) -> None:
                for index, request in todo:
                    finished.put((index, await self._complete_one(transport, request)))

            await asyncio.gather(*(work(transport) for transport in transports))

    # -- what serves ---------------------------------------------------------------------------
    async def _check_served(self, transport: httpx.AsyncBaseTransport) -> str | None:
        """Read /v1/models once per backend: ServedModelMismatch when the name is not listed (or nothing useful is
        listed and no served_model is declared); the reason when the endpoint cannot be asked (no answer, 401,
        5xx after the retries: an outage, not a verdict on the model); None when it may be asked."""
        if self._listed is not None:
            return None
        last = "no attempt made"
        for attempt in range(self.max_retries + 1):
            try:
                async with asyncio.timeout(self.timeout_s):
                    status, _, body = await self._send(transport, httpx.Request(
                        "GET", self._models_url, headers=self._headers, extensions=self._extensions))
            except (TimeoutError, httpx.TimeoutException):
                last = f"timed out: no answer within {self.timeout_s:g}s"
            except httpx.TransportError as exc:
                last = f"connection problem: {type(exc).__name__}: {exc}"
            except _Retryable as exc:
                last = str(exc)
            else:
                if status in RETRY_STATUSES:
                    last = f"HTTP {status}: {body[:200].decode('utf-8', errors='replace')}"
                elif status in (401, 403):
                    return (f"{self._models_url} refused the key: HTTP {status}: "
                            f"{body[:200].decode('utf-8', errors='replace')}")
                else:
                    self._listed = listed_name(self.base_url, self.model, self.served_name, self.declared,
                                               status, body)
                    return None
            if attempt < self.max_retries:
                await self._sleep(self._backoff(attempt))
        return f"gave up after {self.max_retries + 1} attempts to read {self._models_url}: {last}"

    async def _send(self, transport: httpx.AsyncBaseTransport, request: httpx.Request
                    ) -> tuple[int, httpx.Headers, bytes]:
        """(status, headers, body) of one request; the body read as it arrives, within max_answer_bytes."""
        response = await transport.handle_async_request(request)
        try:
            chunks, size = [], 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > self.max_answer_bytes:
                    raise _Retryable(f"HTTP {response.status_code} answer over {self.max_answer_bytes:,} bytes "
                                     "(max_answer_mb); not read further", answered=True)
                chunks.append(chunk)
        finally:
            await response.aclose()
        return response.status_code, response.headers, b"".join(chunks)

    async def _post(self, transport: httpx.AsyncBaseTransport, payload: bytes) -> tuple[int, httpx.Headers, bytes]:
        """(status, headers, body) of one POST to the chat completions."""
        return await self._send(transport, httpx.Request("POST", self._completions_url, headers=self._headers,
                                                         content=payload, extensions=self._extensions))

    async def _complete_one(self, transport: httpx.AsyncBaseTransport, request: LLMRequest) -> Completion:
        started = time.perf_counter()
        payload = json.dumps(self.body_for(request), ensure_ascii=False).encode("utf-8")
        last_reason, answered = "no attempt made", False
        for attempt in range(self.max_retries + 1):
            sent_at = time.perf_counter()
            try:
                async with asyncio.timeout(self.timeout_s):
                    status, headers, body = await self._post(transport, payload)
                return self._completion_from(status, headers, body, time.perf_counter() - sent_at)
            except _Retryable as exc:
                last_reason, wait, answered = str(exc), exc.retry_after_s, exc.answered
            except TimeoutError:
                last_reason, wait, answered = (f"timed out: no complete answer within {self.timeout_s:g}s (timeout_s: "
                                               "the deadline for connecting, sending and the whole answer)"), None, False
            except httpx.TimeoutException as exc:
                last_reason, wait, answered = f"timed out after {self.timeout_s:g}s ({type(exc).__name__})", None, False
            except httpx.TransportError as exc:
                last_reason, wait, answered = f"connection problem: {type(exc).__name__}: {exc}", None, False
            except _Final as exc:   # asking again in this run cannot help
                return Completion(text=exc.text, latency_s=time.perf_counter() - sent_at, error=str(exc),
                                  retryable=False, answered=exc.answered)
            if attempt < self.max_retries:   # this connection waits too: a struggling server gets less load
                await self._sleep(wait if wait is not None else self._backoff(attempt))
        return Completion(text=None, latency_s=time.perf_counter() - started, answered=answered,
                          error=f"gave up after {self.max_retries + 1} attempts: {last_reason}")

    def _backoff(self, attempt: int) -> float:
        return min(self.backoff_max_s, self.backoff_base_s * 2 ** attempt) * (0.5 + random.random())

    def _completion_from(self, status: int, headers: httpx.Headers, body: bytes, latency_s: float) -> Completion:
        text = body[:300].decode("utf-8", errors="replace")
        if status in RETRY_STATUSES:
            raise _Retryable(f"HTTP {status}: {text[:200]}", retry_after_seconds(headers.get("retry-after")))
        if status in REQUEST_STATUSES:   # e.g. a prompt too long for the model: the request's own failure
            raise _Final(f"HTTP {status}: {text}", answered=True)
        if status >= 400:                # 401, 404...: the endpoint or its settings, not this request
            raise _Final(f"HTTP {status}: {text}", answered=False)
        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise _Retryable(f"HTTP {status} answer is not JSON ({type(exc).__name__}): {text[:120]!r}",
                             answered=True) from None
        if not isinstance(data, dict):
            kind = {list: "list", str: "string", bool: "boolean", type(None): "null"}.get(type(data), "number")
            raise _Retryable(f"HTTP {status} answer is a JSON {kind}, not a chat completion", answered=True)
        try:
            answer = ChatCompletion.model_validate(data)
        except ValidationError as exc:
            raise _Retryable(f"HTTP {status} answer of the wrong shape: {_shape_problem(exc)}", answered=True) from None
        choice, usage = answer.choices[0], answer.usage or ChatUsage()
        if answer.model is not None and not same_model(self.served_name, answer.model):
            raise ServedModelMismatch(f"{self.base_url} answered a request for "
                                      f"{described(self.model, self.served_name, self.declared)} as {answer.model!r}: "
                                      "another model served it; refused, nothing cached")
        error = None if choice.message.content is not None else f"empty message (finish_reason={choice.finish_reason})"
        return Completion(text=choice.message.content, prompt_tokens=usage.prompt_tokens,
                          completion_tokens=usage.completion_tokens, latency_s=latency_s, error=error,
                          finish_reason=choice.finish_reason, served_model=answer.model or self._listed or None)


class _Final(Exception):
    """A problem retrying will not fix in this run: the endpoint refused this request (answered=True: cached as
    its failure), or refuses every request (401, 404: answered=False, asked again by the next run)."""

    def __init__(self, reason: str, text: str | None = None, answered: bool = True):
        super().__init__(reason)
        self.text = text
        self.answered = answered


def _next_finished(finished: queue.SimpleQueue) -> tuple:
    """The next (index, completion), waiting as long as it takes unless the process is told to stop: a stop
    signal's exception that Python lost (raised inside a finaliser) would otherwise leave the caller waiting on an
    endpoint that never answers until the grace timer ends the command."""
    while True:
        try:
            return finished.get(timeout=STOP_CHECK_S)
        except queue.Empty:
            check_stop()


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
