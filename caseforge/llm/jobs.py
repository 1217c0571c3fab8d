"""Jobs, not calls: a step hands over a batch of requests and gets validated outputs and failures.

Every answer is cached in ops.llm_calls under its request identity. A repeated request is answered
from the cache; a job killed halfway and started again sends only what had not finished, because
finished calls are committed in batches while the job runs (one transaction per `batch_size - concurrency + 1`
calls or per ten seconds, never one per call: a kill loses at most one `batch_size` of asked requests) and again
when it is interrupted.

Only what another attempt can fix is asked again, after the first pass over all: an answer that
failed to parse when the request samples (temperature > 0, so another seed gives another answer), or
a backend error the backend marks retryable. A greedy (temperature 0) request gives the same answer
again, and a prompt that does not fit the context window never fits: those fail at once. A prose
answer cut off at max_tokens is a failure, not a short answer. Tokens and latency are summed over a
request's attempts. A failure stays cached; `retry_failed` (or [llm] retry_failed in the settings)
asks those requests once more.

A request no endpoint answered (Completion.answered False: refused or cut connections, a missed deadline,
429/5xx after the backend's retries) is recorded with status 'unanswered' but is not its answer: the next
run asks it again, and it never replaces an ok or failed answer already cached.
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import datetime, timezone

import duckdb
import pyarrow as pa
from pydantic import BaseModel

from caseforge.llm import fanout as fan_out
from caseforge.llm.cache import UNANSWERED, cached_calls, calls_table, write_calls
from caseforge.llm.parsing import InvalidOutput, parse_output, schema_for
from caseforge.llm.reply_bounds import UnboundedReply, longest_reply
from caseforge.llm.types import Completion, Failure, FreeText, JobResult, LLMRequest
from caseforge.progress import Progress
from caseforge.settings import load_settings
from caseforge.run_record import current_run

log = logging.getLogger(__name__)

DEFAULT_MAX_ATTEMPTS = 3


def _check_reply_fits(step: str, request: LLMRequest, longest: dict[str, int]) -> None:
    """ValueError before any call when the request's schema admits a reply longer than its max_tokens:
    constrained decoding would let a looping model run into the limit and leave JSON that never closes."""
    text = json.dumps(request.json_schema, sort_keys=True)
    if text not in longest:
        try:
            longest[text] = longest_reply(request.json_schema)
        except UnboundedReply as exc:
            raise ValueError(f"{step}: the reply schema is unbounded ({exc}): give every string a "
                             f"max_length and every list a max_length") from None
    if longest[text] > request.params.max_tokens:
        raise ValueError(f"{step}: the reply schema admits {longest[text]} characters but max_tokens is "
                         f"{request.params.max_tokens}: a reply could be cut before its JSON closes")


def run_job(
    con: duckdb.DuckDBPyConnection,
    step: str,
    backend,
    requests: list[LLMRequest],
    output_model: type[BaseModel],
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    retry_failed: bool | None = None,
    fanout: bool = True,
    on_saved: Callable[[pa.Table], None] | None = None,
    refresh: bool | None = None,
) -> JobResult:
    """Answer every request (cache first), parse into `output_model`, record everything.

    Output that can change on another attempt is retried up to `max_attempts` times (with a varied
    seed), then recorded as a failure with the raw text. Failures recorded by an earlier run count as
    finished unless `retry_failed` (default: the current settings' retry_failed: --retry-failed, else
    CASEFORGE_LLM_RETRY_FAILED, else [llm] retry_failed). The caller decides what
    a failure means for its step.

    When the settings name a worker pool ([fanout] pool), what is not cached is answered by shard flow runs
    on that pool and merged into the cache (caseforge.llm.fanout); `fanout=False` always answers here (a
    shard worker does). `on_saved(table)` is called with each batch of rows once it is in the cache (a shard
    worker copies them to the shard store as they come).

    `refresh` (default: the current settings' llm_refresh: --refresh, else CASEFORGE_LLM_REFRESH) asks every
    request again, cached or not; the new answers replace the cached ones, which are kept in
    ops.llm_call_history.
    """
    settings = load_settings()           # the command's or the run's, made current where it started
    retry_failed = settings.retry_failed if retry_failed is None else retry_failed
    refresh = settings.llm_refresh if refresh is None else refresh
    keys = [r.key for r in requests]
    if len(set(keys)) != len(keys):
        raise ValueError(f"{step}: request keys must be unique within a job")
    result = JobResult()
    schema = None if output_model is FreeText else schema_for(output_model)
    by_identity: dict[str, list[LLMRequest]] = {}
    longest: dict[str, int] = {}
    for request in requests:
        if request.json_schema is None and schema is not None:
            request = request.model_copy(update={"json_schema": schema})
        if request.json_schema is not None:
            _check_reply_fits(step, request, longest)
        by_identity.setdefault(request.identity(backend.model), []).append(request)

    cached = cached_calls(con, list(by_identity))
    pending: list[tuple[str, LLMRequest]] = []
    for identity, group in by_identity.items():
        hit = cached.get(identity)
        if hit is not None and hit[0] != UNANSWERED and not refresh and (hit[0] == "ok" or not retry_failed):
            status, parsed, raw, error = hit
            for request in group:
                result.cache_hits += 1
                if status == "ok":
                    result.outputs[request.key] = output_model.model_validate_json(parsed)
                else:
                    result.failures[request.key] = Failure(request.key, identity, error or "failed earlier", raw)
            continue
        pending.append((identity, group[0]))

    if pending and fanout:
        report = fan_out.answer_by_fanout(con, step, backend, pending, output_model, max_attempts, refresh,
                                          settings.file.fanout)
        if report is not None:
            _read_back(con, result, pending, by_identity, output_model, report)
            if result.failures:
                log.warning("llm %s: %d of %d requests failed", step, len(result.failures), len(requests))
            return result

    attempts = min(max_attempts, int(getattr(backend, "max_attempts", max_attempts)))
    progress = Progress(f"llm {step}", total=len(pending), unit="requests",
                        counters={"cache_hits": result.cache_hits}) if pending else None
    if not pending and requests:
        log.info("llm %s: all %d request(s) answered from the cache (%d cache hits)", step, len(requests),
                 result.cache_hits)
    writer = _CallWriter(con, flush_every=_save_every(backend), on_saved=on_saved, refresh=refresh)
    spent: dict[str, _Spent] = {}
    todo = pending
    try:
        for attempt in range(1, attempts + 1):
            if not todo:
                break
            retry = []
            sent = [_with_attempt_seed(request, attempt) for _, request in todo]
            # closing() stops a streaming backend's in-flight work at once if this loop fails
            with closing(_completions_as_finished(backend, sent)) as answers:
                for index, completion in answers:
                    identity, request = todo[index]
                    result.backend_calls += 1
                    result.prompt_tokens += completion.prompt_tokens or 0
                    result.completion_tokens += completion.completion_tokens or 0
                    spent.setdefault(identity, _Spent()).add(completion)
                    parsed, error = _parse(completion, output_model)
                    if parsed is None and attempt < attempts and _another_attempt_can_help(request, completion):
                        retry.append((identity, request))
                        continue
                    writer.add(_call_row(step, backend, identity, request, completion, parsed, error, attempt,
                                         spent.pop(identity)))
                    for same in by_identity[identity]:
                        if parsed is not None:
                            result.outputs[same.key] = parsed
                        else:
                            result.failures[same.key] = Failure(same.key, identity, error, completion.text,
                                                                answered=completion.answered)
                    progress.step(1, tokens=completion.completion_tokens or 0)
            todo = retry
    except BaseException:
        writer.flush_after_interruption()
        raise
    writer.flush()
    if progress is not None:
        progress.close()
    if result.failures:
        log.warning("llm %s: %d of %d requests failed", step, len(result.failures), len(requests))
    return result


def _save_every(backend) -> int:
    """How many answers are saved at once: a kill then loses at most one batch_size of asked requests, the
    ones in flight (up to the backend's concurrency) and the answers not saved yet."""
    batch = max(1, int(getattr(backend, "batch_size", 64)))
    return max(1, batch - int(getattr(backend, "concurrency", 1)) + 1)


def _read_back(con, result: JobResult, pending, by_identity, output_model, report) -> None:
    """The answers shard workers gave, as merged into the cache; a request of a shard given up is a
    failure (not cached, so the next run asks it again)."""
    cached = cached_calls(con, [identity for identity, _ in pending])
    given_up = report.failed()
    for identity, _ in pending:
        hit = cached.get(identity)
        for request in by_identity[identity]:
            if hit is None:
                reason = given_up.get(identity, "the shard workers returned no answer")
                result.failures[request.key] = Failure(request.key, identity, reason, None)
            elif hit[0] == "ok":
                result.outputs[request.key] = output_model.model_validate_json(hit[1])
            else:
                result.failures[request.key] = Failure(request.key, identity, hit[3] or "failed", hit[2],
                                                       answered=hit[0] != UNANSWERED)
    result.backend_calls += report.calls
    result.prompt_tokens += report.prompt_tokens
    result.completion_tokens += report.completion_tokens
    result.fanout = report


def _another_attempt_can_help(request: LLMRequest, completion: Completion) -> bool:
    """A backend error the backend calls retryable, or unparseable output of a request that samples."""
    if completion.error is not None:
        return completion.retryable
    return request.params.temperature > 0


class _Spent:
    """Tokens and latency of every attempt at one request."""

    def __init__(self):
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.latency_s: float | None = None

    def add(self, completion: Completion) -> None:
        for name in ("prompt_tokens", "completion_tokens", "latency_s"):
            value = getattr(completion, name)
            if value is not None:
                setattr(self, name, (getattr(self, name) or 0) + value)


def _completions_as_finished(backend, requests: list[LLMRequest]) -> Iterator[tuple[int, Completion]]:
    """(index, completion) for every request, in the order they finish.

    A backend with `complete_stream` hands each answer over as it arrives, so the job parses and
    saves while the rest are still in flight. Otherwise `complete_batch` is called on chunks of
    `batch_size`.
    """
    stream = getattr(backend, "complete_stream", None)
    if stream is not None:
        seen = set()
        answers = stream(requests)
        try:
            for index, completion in answers:
                if index in seen or not 0 <= index < len(requests):
                    raise RuntimeError(f"{backend.name} answered request {index} twice or out of range")
                seen.add(index)
                yield index, completion
        finally:
            if hasattr(answers, "close"):
                answers.close()
        if len(seen) != len(requests):
            raise RuntimeError(f"{backend.name} answered {len(seen)} of {len(requests)} requests")
        return
    size = max(1, int(getattr(backend, "batch_size", 64)))
    for start in range(0, len(requests), size):
        chunk = requests[start:start + size]
        completions = backend.complete_batch(chunk)
        if len(completions) != len(chunk):
            raise RuntimeError(f"{backend.name} returned {len(completions)} completions for {len(chunk)} requests")
        yield from enumerate(completions, start)


CUT_OFF = "answer cut off at max_tokens"      # the reason of a prose answer that reached the limit


def _parse(completion: Completion, output_model: type[BaseModel]) -> tuple[BaseModel | None, str | None]:
    if completion.error is not None:
        return None, completion.error
    if output_model is FreeText and completion.finish_reason == "length":
        return None, f"{CUT_OFF} ({completion.completion_tokens or '?'} tokens)"
    try:
        return parse_output(completion.text, output_model), None
    except InvalidOutput as exc:
        return None, str(exc)


def _call_row(step, backend, identity, request, completion, parsed, error, attempts, spent: _Spent) -> tuple:
    """One ops.llm_calls row, in CALL_COLUMNS order (tokens and latency summed over the attempts), with the model
    that served it (as the backend said) and the run that asked."""
    return (
        identity, step, backend.name, backend.model, request.template_id, request.template_sha,
        request.model_dump_json(), completion.text, None if parsed is None else parsed.model_dump_json(),
        "ok" if parsed is not None else "failed" if completion.answered else UNANSWERED,
        None if parsed is not None else (error or "no output"),
        attempts, spent.prompt_tokens, spent.completion_tokens,
        None if spent.latency_s is None else spent.latency_s * 1000.0, datetime.now(timezone.utc),
        completion.served_model, current_run(),
    )


class _CallWriter:
    """Buffers finished calls and writes them in one transaction per `flush_every` rows, or sooner
    when `flush_interval_s` has passed, so a slow backend loses little to a hard kill."""

    def __init__(self, con: duckdb.DuckDBPyConnection, flush_every: int, flush_interval_s: float = 10.0,
                 on_saved: Callable[[pa.Table], None] | None = None, refresh: bool = False):
        self.con = con
        self.refresh = refresh
        self.on_saved = on_saved
        self.flush_every = flush_every
        self.flush_interval_s = flush_interval_s
        self.rows: list[tuple] = []
        self.last_flush = time.monotonic()

    def add(self, row: tuple) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.flush_every or time.monotonic() - self.last_flush >= self.flush_interval_s:
            self.flush()

    def flush(self) -> None:
        rows, self.rows = self.rows, []
        self.last_flush = time.monotonic()
        write_calls(self.con, rows, self.refresh)
        if rows and self.on_saved is not None:
            self.on_saved(calls_table(rows))

    def flush_after_interruption(self) -> None:
        """Keep the answers already received; a failure here must not hide the original error."""
        count = len(self.rows)
        try:
            self.flush()
        except Exception:   # noqa: BLE001 - the exception being handled is the one to report
            log.exception("could not save %d finished LLM calls while stopping", count)


def _with_attempt_seed(request: LLMRequest, attempt: int) -> LLMRequest:
    """A retry must not get the same deterministic answer again; identity stays the original's."""
    if attempt == 1:
        return request
    seed = (request.params.seed or 0) + attempt
    return request.model_copy(update={"params": request.params.model_copy(update={"seed": seed})})
