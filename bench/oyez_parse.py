"""Oyez: parse throughput on every sample case, and the cost of a refresh when nothing changed.

Run: .venv/bin/python bench/oyez_parse.py [--quick]   (reads CASEFORGE_SAMPLES, default ../shared/samples)
Prints cases/second for parsing and the HTTP requests a no-op refresh makes against a local
server double holding all sample cases (target: 1, the case list, answered 304).
--quick: the first 20 sample cases, parsed once (CI checks that the bench still runs).
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import httpx

from caseforge.settings import Settings
from caseforge.tasks.oyez import ingest
from caseforge.tasks.oyez.parse import parse_case


def samples_dir() -> Path:
    return Settings().samples_dir


def parse_throughput(files: list[Path], rounds: int = 5) -> float:
    bodies = [p.read_bytes() for p in files]
    started = time.perf_counter()
    for _ in range(rounds):
        for body in bodies:
            parse_case(body, raw_sha256="0" * 64)
    return rounds * len(bodies) / (time.perf_counter() - started)


def noop_refresh_cost(files: list[Path]) -> dict:
    details = {}
    summaries = []
    for path in files:
        data = json.loads(path.read_bytes())
        details["/" + data["href"].split("api.oyez.org/")[1]] = path.read_bytes()
        summaries.append({k: data.get(k) for k in ("ID", "name", "href", "term", "docket_number")})
    listing = json.dumps(summaries).encode()
    requests = []

    def server(request: httpx.Request) -> httpx.Response:
        requests.append(request.url.path)
        if request.url.path == "/cases":
            if request.headers.get("If-None-Match") == '"v1"':
                return httpx.Response(304)
            return httpx.Response(200, content=listing, headers={"ETag": '"v1"'})
        return httpx.Response(200, content=details[request.url.path])

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(db_path=Path(tmp) / "bench.duckdb", requests_per_second=0)
        started = time.perf_counter()
        ingest.refresh(settings, transport=httpx.MockTransport(server))
        first_s = time.perf_counter() - started
        first_requests = len(requests)
        requests.clear()
        started = time.perf_counter()
        report = ingest.refresh(settings, transport=httpx.MockTransport(server))
        noop_s = time.perf_counter() - started
    return {"cases": len(files), "first_refresh_requests": first_requests, "first_refresh_s": round(first_s, 2),
            "noop_refresh_requests": len(requests), "noop_refresh_s": round(noop_s, 2),
            "noop_changed": report.counts.get("changed", 0) + report.counts.get("new", 0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first 20 sample cases, parsed once")
    args = parser.parse_args()
    files = sorted((samples_dir() / "oyez" / "cases").glob("*.json"))
    if not files:
        raise SystemExit(f"no Oyez samples under {samples_dir()}")
    if args.quick:
        files = files[:20]
    rate = parse_throughput(files, rounds=1 if args.quick else 5)
    print(f"parse: {rate:,.0f} cases/second over {len(files)} sample cases")
    cost = noop_refresh_cost(files)
    print(f"refresh: first run {cost['first_refresh_requests']} requests in {cost['first_refresh_s']}s; "
          f"no-op run {cost['noop_refresh_requests']} request(s) in {cost['noop_refresh_s']}s, "
          f"{cost['noop_changed']} changed")
    print(json.dumps({"cases_per_second": round(rate, 1), **cost}))


if __name__ == "__main__":
    main()
