"""A stop whose exception Python lost still stops a batch that waits on its endpoint.

A stop signal's handler raises RunStopped in the main thread; raised inside a finaliser (a __del__, a weakref
callback run by the garbage collector), Python prints and drops it, and only the recorded request is left
(caseforge.stopping). A command that then waited on an endpoint that never answers stayed there until the grace
timer ended it 10 s later ("work still running after 10 s was abandoned"): CI's run of
tests/integration/test_stop_signals_together.py lost one try of 50 that way. The batch's wait now looks at the
recorded request. No socket: the endpoint is an httpx transport double that takes a request and never answers."""
from __future__ import annotations

import asyncio
import signal
import threading
import time

import httpx
import pytest

from caseforge import stopping
from caseforge.llm.backends.openai_compat import OpenAIBackend
from caseforge.llm.check import free_text_request


class NeverAnsweringTransport(httpx.AsyncBaseTransport):
    """Test double of an endpoint that lists the model and then never answers a completion."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"object": "list", "data": [{"id": "m", "object": "model"}]})
        await asyncio.Event().wait()
        raise AssertionError("never reached")


@pytest.fixture
def no_stop():
    stopping.forget_stop()
    yield
    stopping.forget_stop()


def test_a_stop_recorded_without_its_exception_ends_the_wait_for_an_answer(no_stop):
    backend = OpenAIBackend("m", base_url="http://endpoint.test/v1", transport=NeverAnsweringTransport(),
                            timeout_s=30, max_retries=0)
    lost = threading.Timer(0.3, stopping.request_stop, args=(signal.SIGTERM,))     # what a lost handler leaves
    lost.start()
    began = time.monotonic()
    try:
        with pytest.raises(stopping.RunStopped) as stopped:
            backend.complete_batch([free_text_request()])
    finally:
        lost.cancel()
    assert stopped.value.request.reason == "interrupted by SIGTERM"
    assert time.monotonic() - began < 5        # not the 30 s of the endpoint's deadline, nor the 10 s grace


def test_a_batch_whose_answers_come_is_not_slowed_by_the_stop_checks(no_stop):
    class Answering(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request):
            if request.url.path.endswith("/models"):
                return httpx.Response(200, json={"object": "list", "data": [{"id": "m", "object": "model"}]})
            await asyncio.sleep(0.01)
            return httpx.Response(200, json={"model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                                                                       "message": {"role": "assistant",
                                                                                   "content": "ok"}}]})

    backend = OpenAIBackend("m", base_url="http://endpoint.test/v1", transport=Answering(), concurrency=4)
    completions = backend.complete_batch([free_text_request() for _ in range(8)])
    assert [c.text for c in completions] == ["ok"] * 8
