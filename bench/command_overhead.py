"""What Prefect costs a command: `caseforge ingest oyez --from-dir` of one sample case, timed as a user runs it
(a fresh `caseforge` process each time), against the same work without Prefect, in one run.

Run: .venv/bin/python bench/command_overhead.py [--repeats N]   (reads CASEFORGE_SAMPLES, default ../shared/samples)

Three ways, interleaved round by round so a busy machine slows them alike:

- bare       `caseforge.tasks.oyez.ingest.refresh` called from a plain `python -c` (no Prefect at all): the
             floor; a command's overhead is its time minus this one's median
- ephemeral  `caseforge ingest oyez` with CASEFORGE_PREFECT_SERVER=ephemeral: a temporary Prefect server
             started and stopped by every command (main's behaviour before the local server); its first
             command also migrates a fresh Prefect database (`cold`)
- local      `caseforge ingest oyez` reusing the local Prefect server (`caseforge server`); its first command
             starts it (`cold`), the others find it up (`warm`); skipped where the command line has no
             `server` verb

Every command gets a fresh warehouse and its own temporary PREFECT_HOME per way, so nothing here touches
~/.prefect or the project's data, and the local server is stopped at the end.
Prints seconds per command (median of the warm ones, and the cold one), the overhead over bare, and the
ratio ephemeral/local of both.
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
from pathlib import Path

BIN = Path(sys.executable).parent
SAMPLE = "1789_1850.10us87.json"        # one small real case-detail file
TARGET_WARM_OVERHEAD_S = 2.0

BARE = """
import sys
from caseforge.config import settings
from caseforge.tasks.oyez import ingest
report = ingest.refresh(settings(sys.argv[1]), from_dir=sys.argv[2])
assert report.counts["passed_gate"] == 1, report.counts
"""


def samples_dir() -> Path:
    default = Path(__file__).resolve().parent.parent.parent / "shared" / "samples"
    return Path(os.environ.get("CASEFORGE_SAMPLES", str(default)))


def timed(args: list[str], env: dict) -> float:
    started = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(args)}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return elapsed


def has_server_verb() -> bool:
    done = subprocess.run([str(BIN / "caseforge"), "server", "--help"], capture_output=True, text=True)
    return done.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="warm commands per way (default 3)")
    options = parser.parse_args()
    sample = samples_dir() / "oyez" / "cases" / SAMPLE
    if not sample.is_file():
        raise SystemExit(f"sample not found: {sample} (set CASEFORGE_SAMPLES)")
    ways = ["bare", "ephemeral"] + (["local"] if has_server_verb() else [])
    with tempfile.TemporaryDirectory(prefix="cf-overhead-") as tmp:
        root = Path(tmp)
        (root / "one").mkdir()
        (root / "one" / SAMPLE).write_bytes(sample.read_bytes())
        base = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "CASEFORGE_PREFECT_SERVER")}
        base.update(DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false")
        envs = {way: {**base, "PREFECT_HOME": str(root / f"prefect-{way}")} for way in ways}
        envs["ephemeral"]["CASEFORGE_PREFECT_SERVER"] = "ephemeral"
        if "local" in envs:
            envs["local"]["CASEFORGE_PREFECT_SERVER"] = "local"
        times: dict[str, list[float]] = {way: [] for way in ways}
        counter = 0
        try:
            for round_no in range(options.repeats + 1):          # round 0: the cold commands
                for way in ways:
                    counter += 1
                    db = str(root / f"w{counter}.duckdb")
                    if way == "bare":
                        args = [sys.executable, "-c", BARE, db, str(root / "one")]
                    else:
                        args = [str(BIN / "caseforge"), "ingest", "oyez", "--from-dir", str(root / "one"), "--db", db]
                    seconds = timed(args, envs[way])
                    times[way].append(seconds)
                    print(f"round {round_no} {way:9} {seconds:6.2f} s", file=sys.stderr, flush=True)
        finally:
            if "local" in envs:
                subprocess.run([str(BIN / "caseforge"), "server", "stop", "--force"], env=envs["local"],
                               capture_output=True, timeout=120)
    bare = statistics.median(times["bare"])
    result: dict = {"command": "caseforge ingest oyez --from-dir DIR_WITH_ONE_CASE --db NEW.duckdb",
                    "repeats": options.repeats, "bare_median_s": round(bare, 2)}
    print(f"{'way':10} {'cold s':>7} {'warm s':>7} {'cold overhead s':>16} {'warm overhead s':>16}")
    print(f"{'bare':10} {'':>7} {bare:7.2f}")
    for way in ways[1:]:
        cold, warm = times[way][0], statistics.median(times[way][1:])
        result[way] = {"cold_s": round(cold, 2), "warm_median_s": round(warm, 2),
                       "cold_overhead_s": round(cold - bare, 2), "warm_overhead_s": round(warm - bare, 2),
                       "all_s": [round(t, 2) for t in times[way]]}
        print(f"{way:10} {cold:7.2f} {warm:7.2f} {cold - bare:16.2f} {warm - bare:16.2f}")
    if "local" in result:
        eph, loc = result["ephemeral"], result["local"]
        ratio_overhead = eph["warm_overhead_s"] / max(loc["warm_overhead_s"], 0.01)
        ratio_command = eph["warm_median_s"] / loc["warm_median_s"]
        result["ratio_warm_overhead_ephemeral_over_local"] = round(ratio_overhead, 1)
        result["ratio_warm_command_ephemeral_over_local"] = round(ratio_command, 2)
        verdict = "met" if loc["warm_overhead_s"] < TARGET_WARM_OVERHEAD_S else "NOT met"
        print(f"warm overhead ephemeral/local: {ratio_overhead:.1f}x; whole command: {ratio_command:.2f}x; "
              f"target warm overhead < {TARGET_WARM_OVERHEAD_S:.0f} s: {verdict}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
