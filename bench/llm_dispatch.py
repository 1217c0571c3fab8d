"""How close does the LLM layer get to a server's limit, and what does it cost per call?

1. Overhead: N requests rendered from a template and run through run_job with a zero-latency
   in-process backend double, on a fresh DuckDB file: rendering, identity, cache lookup and write,
   parsing. Reported as ms per call.
2. Dispatch: the same N requests through run_job + OpenAIBackend(concurrency=C) against a
   scripted OpenAI-compatible server double (a separate process on loopback) that answers after a
   fixed latency L. The ideal is C / L requests per second.

The last line printed is one JSON object with the numbers.
    python bench/llm_dispatch.py [--requests 5000] [--concurrency 32] [--latency-s 0.1] [--quick]
--quick: 200 requests, concurrency 8, latency 10 ms (CI checks that the bench still runs).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pydantic import BaseModel

from caseforge.llm import SamplingParams, request_from_template, run_job
from caseforge.llm.backends.openai_compat import OpenAIBackend
from caseforge.llm.reply_bounds import text
from caseforge.llm.types import Completion
from caseforge.warehouse.connection import connect


class Echo(BaseModel):
    echo: text(300)          # the server double says the whole prompt back (about 160 characters)


class ZeroLatencyBackendDouble:
    """Answers instantly in process, so only the layer's own work is timed."""

    name = "zero-latency-double"
    model = "double-model"
    batch_size = 1024

    def complete_batch(self, requests):
        return [Completion(text=json.dumps({"echo": r.messages[-1]["content"][:40]}), prompt_tokens=20,
                           completion_tokens=8, latency_s=0.0) for r in requests]


def build_requests(n: int, tag: str):
    params = SamplingParams(temperature=0.0, max_tokens=512)     # room for the longest Echo the schema admits
    return [request_from_template(f"{tag}-{i}", "bench/dispatch.j2", params=params, item_id=f"{tag}-{i}",
                                  sentence=f"The court of appeal heard case number {i} ({tag}).")
            for i in range(n)]


def measure_overhead(n: int, workdir: Path) -> dict:
    con = connect(workdir / "overhead.duckdb")
    started = time.perf_counter()
    requests = build_requests(n, "overhead")
    rendered = time.perf_counter()
    result = run_job(con, "bench", ZeroLatencyBackendDouble(), requests, Echo)
    finished = time.perf_counter()
    assert len(result.outputs) == n, result.counts()
    again = time.perf_counter()
    cached = run_job(con, "bench", ZeroLatencyBackendDouble(), requests, Echo)
    assert cached.cache_hits == n
    rerun = time.perf_counter() - again
    con.close()
    return {"overhead_ms_per_call": 1000 * (finished - started) / n,
            "render_ms_per_call": 1000 * (rendered - started) / n,
            "job_ms_per_call": 1000 * (finished - rendered) / n,
            "cache_hit_ms_per_call": 1000 * rerun / n}


def measure_dispatch(n: int, concurrency: int, latency_s: float, workdir: Path) -> dict:
    server = subprocess.Popen([sys.executable, "-m", "caseforge.llm.doubles", "--latency-s", str(latency_s)],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())
        con = connect(workdir / "dispatch.duckdb")
        backend = OpenAIBackend("double-model", base_url=f"http://127.0.0.1:{port}/v1", concurrency=concurrency,
                                timeout_s=30, structured="vllm")
        requests = build_requests(n, "dispatch")
        started = time.perf_counter()
        cpu_started = time.process_time()
        result = run_job(con, "bench", backend, requests, Echo)
        elapsed = time.perf_counter() - started
        client_cpu_s = time.process_time() - cpu_started
        # what one round trip really took as the client saw it (server double + scheduling included)
        observed_ms = con.execute("SELECT avg(latency_ms) FROM ops.llm_calls WHERE step = 'bench'").fetchone()[0]
        con.close()
    finally:
        server.terminate()
        server.wait(5)
    assert len(result.outputs) == n, result.counts()
    achieved = n / elapsed
    limit = concurrency / latency_s
    return {"requests": n, "concurrency": concurrency, "latency_ms": latency_s * 1000,
            "elapsed_s": round(elapsed, 3), "achieved_rps": round(achieved, 1), "limit_rps": round(limit, 1),
            "ratio": round(achieved / limit, 3),
            "observed_latency_ms": round(observed_ms, 1),
            "ratio_at_observed_latency": round(achieved / (concurrency / (observed_ms / 1000)), 3),
            "client_cpu_ms_per_call": round(1000 * client_cpu_s / n, 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-s", type=float, default=0.1)
    parser.add_argument("--quick", action="store_true", help="200 requests, concurrency 8, latency 10 ms")
    args = parser.parse_args()
    if args.quick:
        args.requests, args.concurrency, args.latency_s = 200, 8, 0.01
    with tempfile.TemporaryDirectory() as tmp:
        overhead = measure_overhead(args.requests, Path(tmp))
        print("overhead:", json.dumps(overhead), flush=True)
        dispatch = measure_dispatch(args.requests, args.concurrency, args.latency_s, Path(tmp))
        print("dispatch:", json.dumps(dispatch), flush=True)
    summary = {**dispatch, **{k: round(v, 4) for k, v in overhead.items()}}
    with open("/proc/loadavg") as handle:
        summary["load_average_1m"] = float(handle.read().split()[0])
    summary["targets_met"] = summary["ratio"] >= 0.9 and summary["overhead_ms_per_call"] <= 1.0
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
