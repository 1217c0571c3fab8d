"""What does the object store cost a shard, against a local folder?

One shard of N requests (the CaseFacts-like bench prompt, JSON schema included) goes the whole fan-out data
path: the orchestrator writes its requests to the store, the worker (caseforge.llm.worker.run_shard) reads
them, asks the `openai` backend (concurrency C) against a scripted OpenAI-compatible server double in its own
process that answers after L seconds, saves each batch as a part and the answers whole, and the orchestrator
reads the answers back and merges them into a warehouse. The same shard runs with the store a local folder
and an s3:// bucket on a real SeaweedFS server on loopback (tests/s3_server.py), alternating, R rounds, in
one run; the overhead is the median difference over the median S3 shard time. Target: under 10% at 1,000
requests per shard.

    python bench/fanout_store.py [--requests 1000] [--concurrency 32] [--latency-s 0.1] [--rounds 3] [--quick]
--quick: 100 requests, latency 10 ms, 1 round (CI checks that the bench still runs).
The last line printed is one JSON object with the numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))   # the SeaweedFS helper of the tests

from llm_dispatch import Echo, build_requests  # noqa: E402  (bench/ is on sys.path when run as a script)
from s3_server import S3Server  # noqa: E402

from caseforge.llm.backends.openai_compat import OpenAIBackend  # noqa: E402
from caseforge.llm.parsing import schema_for  # noqa: E402
from caseforge.llm.shards import Shard, merge_rows  # noqa: E402
from caseforge.llm.worker import run_shard  # noqa: E402
from caseforge.store import open_store  # noqa: E402
from caseforge.warehouse.connection import connect  # noqa: E402


def one_shard(store, requests, base_url: str, concurrency: int, workdir: Path, tag: str) -> dict:
    """The whole data path of one shard; seconds per phase."""
    schema = schema_for(Echo)
    requests = [r.model_copy(update={"json_schema": schema, "key": f"{tag}-{r.key}",
                                     "messages": r.messages[:-1] + [{"role": "user",
                                                                     "content": r.messages[-1]["content"] + tag}]})
                for r in requests]
    con = connect(workdir / f"{tag}.duckdb")
    shard = Shard(store, f"{tag}-shard-000")
    times = {}
    started = time.perf_counter()
    shard.write_requests(requests)
    times["write_requests_s"] = time.perf_counter() - started
    backend = OpenAIBackend("double-model", base_url=base_url, concurrency=concurrency, timeout_s=30,
                            structured="vllm")
    began = time.perf_counter()
    _, result = run_shard("bench", backend, shard, 1, {"worker": "bench"})
    times["worker_s"] = time.perf_counter() - began
    assert result.counts()["llm_ok"] == len(requests), result.counts()
    began = time.perf_counter()
    rows, worker = shard.read_answers()
    merged = merge_rows(con, rows, Echo, worker)
    shard.remove()
    times["merge_s"] = time.perf_counter() - began
    times["shard_s"] = time.perf_counter() - started
    assert merged.rows == len(requests)
    con.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency-s", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100 requests, latency 10 ms, 1 round")
    args = parser.parse_args()
    if args.quick:
        args.requests, args.latency_s, args.rounds = 100, 0.01, 1
    server = subprocess.Popen([sys.executable, "-m", "caseforge.llm.doubles", "--latency-s", str(args.latency_s)],
                              stdout=subprocess.PIPE, text=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        s3 = S3Server(work / "seaweedfs").start()
        saved = {k: os.environ.get(k) for k in s3.env()}
        os.environ.update(s3.env())
        try:
            base_url = f"http://127.0.0.1:{int(server.stdout.readline())}/v1"
            stores = {"local": open_store(work / "local-store"),
                      "s3": open_store(f"s3://{s3.bucket}/bench-{uuid.uuid4().hex[:6]}")}
            requests = build_requests(args.requests, "shard")
            one_shard(stores["local"], requests[:20], base_url, args.concurrency, work, "warm")   # imports, pools
            seconds: dict[str, list[dict]] = {"local": [], "s3": []}
            for number in range(args.rounds):
                for kind in ("local", "s3") if number % 2 == 0 else ("s3", "local"):
                    times = one_shard(stores[kind], requests, base_url, args.concurrency, work, f"{kind}{number}")
                    seconds[kind].append(times)
                    print(f"round {number + 1} {kind:>5}: shard {times['shard_s']:.2f} s (write requests "
                          f"{times['write_requests_s']:.3f}, worker {times['worker_s']:.2f}, read and merge "
                          f"{times['merge_s']:.3f})", flush=True)
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            s3.stop()
            server.terminate()
            server.wait(5)

    def median(kind: str, key: str) -> float:
        return statistics.median(t[key] for t in seconds[kind])
    local, remote = median("local", "shard_s"), median("s3", "shard_s")
    overhead = remote - local
    print(f"\n| store | shard ({args.requests} requests) | write requests | worker | read and merge |")
    print("| --- | --- | --- | --- | --- |")
    for kind in ("local", "s3"):
        print(f"| {kind} | {median(kind, 'shard_s'):.2f} s | {median(kind, 'write_requests_s'):.3f} s | "
              f"{median(kind, 'worker_s'):.2f} s | {median(kind, 'merge_s'):.3f} s |")
    print(f"overhead of s3: {overhead:+.2f} s per shard = {100 * overhead / remote:+.1f}% of a shard's time")
    summary = {"requests": args.requests, "concurrency": args.concurrency, "latency_ms": args.latency_s * 1000,
               "rounds": args.rounds, "local_shard_s": round(local, 3), "s3_shard_s": round(remote, 3),
               "overhead_s": round(overhead, 3), "overhead_ratio": round(overhead / remote, 4),
               "ideal_shard_s": round(args.requests * args.latency_s / args.concurrency, 3)}
    with open("/proc/loadavg") as handle:
        summary["load_average_1m"] = float(handle.read().split()[0])
    summary["target_met"] = summary["overhead_ratio"] < 0.10
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
