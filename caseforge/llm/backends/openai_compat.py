"""`openai`: any OpenAI-compatible /v1/chat/completions endpoint (vllm serve, llama_cpp.server, OpenAI).

A batch is sent concurrently (asyncio + httpx), never more than `concurrency` requests in flight:
each in-flight request holds one of `concurrency` single-connection clients, handed out through an
asyncio queue that works as the semaphore.
429, 5xx, timeouts, connection errors and unreadable bodies are retried with exponential backoff
and jitter (Retry-After honoured). Whatever still fails becomes Completion(error=...) for that one
request; the rest of the batch is kept.

Structured output styles:
  "vllm"     top-level `structured_outputs: {"json": schema}` (what `extra_body` sends to vllm serve)
  "openai"   `response_format: {"type": "json_schema", "json_schema": {...}}` (OpenAI proper)
  "llamacpp" `response_format: {"type": "json_object", "schema": schema}` (llama_cpp.server)
  "none"     no constraint; the job's parser still validates the answer
"""
from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import ssl
import time

import certifi
import httpx

from caseforge.llm.types import Completion, LLMRequest

STRUCTURED_STYLES = ("vllm", "openai", "llamacpp", "none")
RETRY_STATUSES = {408, 425, 429, 500, 502, 503, 504}
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"


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
        if not requests:
            return []
        return asyncio.run(self._complete_all(requests))

    async def _complete_all(self, requests: list[LLMRequest]) -> list[Completion]:
        # One single-connection client per slot, handed out through a queue (the concurrency bound).
        # httpx's pool scans every connection on each request, which costs more CPU per call than
        # the rest of the layer together once there are dozens of connections in one pool.
        headers = {"content-type": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        slots = min(self.concurrency, len(requests))
        if self._ssl_context is None:   # loading the CA bundle costs ~10 ms: once per backend, not per client
            self._ssl_context = ssl.create_default_context(cafile=certifi.where())
        clients = [httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=httpx.Timeout(self.timeout_s),
                                     verify=self._ssl_context,
                                     limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
                                     transport=self._transport)
                   for _ in range(slots)]
        idle: asyncio.Queue[httpx.AsyncClient] = asyncio.Queue()
        for client in clients:
            idle.put_nowait(client)
        try:
            return list(await asyncio.gather(*(self._complete_one(idle, r) for r in requests)))
        finally:
            for client in clients:
                await client.aclose()

    async def _complete_one(self, idle: asyncio.Queue, request: LLMRequest) -> Completion:
        started = time.perf_counter()
        payload = json.dumps(self.body_for(request), ensure_ascii=False).encode("utf-8")
        last_reason = "no attempt made"
        for attempt in range(self.max_retries + 1):
            client = await idle.get()
            sent_at = time.perf_counter()   # latency is the round trip, not the wait for a free slot
            try:
                response = await client.post("/chat/completions", content=payload)
                return self._completion_from(response, time.perf_counter() - sent_at)
            except _Retryable as exc:
                last_reason, wait = str(exc), exc.retry_after_s
            except httpx.TimeoutException as exc:
                last_reason, wait = f"timed out after {self.timeout_s:g}s ({type(exc).__name__})", None
            except httpx.TransportError as exc:
                last_reason, wait = f"connection problem: {type(exc).__name__}: {exc}", None
            except _Final as exc:
                return Completion(text=exc.text, latency_s=time.perf_counter() - sent_at, error=str(exc))
            finally:
                idle.put_nowait(client)
            if attempt < self.max_retries:   # waits without holding a connection
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
                          completion_tokens=usage.get("completion_tokens"), latency_s=latency_s, error=error)


class _Final(Exception):
    """A problem retrying will not fix (e.g. 400: the request itself is wrong)."""

    def __init__(self, reason: str, text: str | None = None):
        super().__init__(reason)
        self.text = text

