"""What Prefect costs a command: `caseforge ingest oyez --from-dir` of one sample case, timed as a user runs it
(a fresh `caseforge` process each time), against the same work without Prefect, in one run.

Run: .venv/bin/python bench/command_overhead.py [--repeats N] [--quick]   (reads CASEFORGE_SAMPLES, default ../shared/samples)
--quick: the bare way once, no Prefect way (each `caseforge` command costs 5-15 CPU-seconds): CI checks that the
bench still runs and prints its table; the Prefect figures need the full run.

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
Prints seconds per command (median of the warm ones, and the cold one), the overhead over bare, the CPU
seconds a warm command costs (its process, its children, and the local server's share: steadier than wall time
on a busy machine) and the ratios ephemeral/local.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
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
from caseforge.settings import load_settings
from caseforge.tasks.oyez import ingest
report = ingest.refresh(load_settings(sys.argv[1]), from_dir=sys.argv[2])
assert report.counts["passed_gate"] == 1, report.counts
"""


def samples_dir() -> Path:
    default = Path(__file__).resolve().parent.parent.parent / "shared" / "samples"
    return Path(os.environ.get("CASEFORGE_SAMPLES", str(default)))


def server_cpu_s(prefect_home: str) -> tuple[int, float] | None:
    """(pid, CPU seconds so far) of the local server of this PREFECT_HOME, if one runs."""
    try:
        pid = json.loads((Path(prefect_home) / "caseforge-server" / "server.json").read_text())["pid"]
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError, KeyError):
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return pid, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(args: list[str], env: dict) -> tuple[float, float]:
    """Wall seconds and CPU seconds of one command: its own, its children's (a temporary server is one) and,
    for the local server, what that server spent meanwhile."""
    before_server = server_cpu_s(env["PREFECT_HOME"])
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(args)}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    after_server = server_cpu_s(env["PREFECT_HOME"])
    if after_server is not None:
        same = before_server is not None and before_server[0] == after_server[0]
        cpu += after_server[1] - (before_server[1] if same else 0.0)
    return elapsed, cpu


def has_server_verb() -> bool:
    done = subprocess.run([str(BIN / "caseforge"), "server", "--help"], capture_output=True, text=True)
    return done.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="warm commands per way (default 3)")
    parser.add_argument("--quick", action="store_true", help="the bare way once, no Prefect way")
    options = parser.parse_args()
    if options.quick:
        options.repeats = 0
    sample = samples_dir() / "oyez" / "cases" / SAMPLE
    if not sample.is_file():
        raise SystemExit(f"sample not found: {sample} (set CASEFORGE_SAMPLES)")
    ways = ["bare"] if options.quick else ["bare", "ephemeral"] + (["local"] if has_server_verb() else [])
    with tempfile.TemporaryDirectory(prefix="cf-overhead-") as tmp:
        root = Path(tmp)
        (root / "one").mkdir()
        (root / "one" / SAMPLE).write_bytes(sample.read_bytes())
        base = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "CASEFORGE_PREFECT_SERVER")}
        base.update(DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false")
        envs = {way: {**base, "PREFECT_HOME": str(root / f"prefect-{way}")} for way in ways}
        if "ephemeral" in envs:
            envs["ephemeral"]["CASEFORGE_PREFECT_SERVER"] = "ephemeral"
        if "local" in envs:
            envs["local"]["CASEFORGE_PREFECT_SERVER"] = "local"
        times: dict[str, list[float]] = {way: [] for way in ways}
        cpus: dict[str, list[float]] = {way: [] for way in ways}
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
                    seconds, cpu = timed(args, envs[way])
                    times[way].append(seconds)
                    cpus[way].append(cpu)
                    print(f"round {round_no} {way:9} {seconds:6.2f} s wall {cpu:6.2f} s CPU", file=sys.stderr,
                          flush=True)
        finally:
            if "local" in envs:
                subprocess.run([str(BIN / "caseforge"), "server", "stop", "--force"], env=envs["local"],
                               capture_output=True, timeout=120)
    bare, bare_cpu = statistics.median(times["bare"]), statistics.median(cpus["bare"])
    result: dict = {"command": "caseforge ingest oyez --from-dir DIR_WITH_ONE_CASE --db NEW.duckdb",
                    "repeats": options.repeats, "bare_median_s": round(bare, 2), "bare_cpu_s": round(bare_cpu, 2),
                    "bare_all_s": [round(t, 2) for t in times["bare"]]}
    print(f"{'way':10} {'cold s':>7} {'warm s':>7} {'overhead cold':>14} {'overhead warm':>14} "
          f"{'warm CPU s':>11} {'CPU overhead':>13}")
    print(f"{'bare':10} {'':>7} {bare:7.2f} {'':>14} {'':>14} {bare_cpu:11.2f}")
    for way in ways[1:]:
        cold, warm = times[way][0], statistics.median(times[way][1:])
        warm_cpu = statistics.median(cpus[way][1:])
        result[way] = {"cold_s": round(cold, 2), "warm_median_s": round(warm, 2),
                       "cold_overhead_s": round(cold - bare, 2), "warm_overhead_s": round(warm - bare, 2),
                       "warm_cpu_s": round(warm_cpu, 2), "warm_cpu_overhead_s": round(warm_cpu - bare_cpu, 2),
                       "all_s": [round(t, 2) for t in times[way]], "all_cpu_s": [round(t, 2) for t in cpus[way]]}
        print(f"{way:10} {cold:7.2f} {warm:7.2f} {cold - bare:14.2f} {warm - bare:14.2f} {warm_cpu:11.2f} "
              f"{warm_cpu - bare_cpu:13.2f}")
    if "local" in result:
        eph, loc = result["ephemeral"], result["local"]
        ratio_overhead = eph["warm_overhead_s"] / max(loc["warm_overhead_s"], 0.01)
        ratio_command = eph["warm_median_s"] / loc["warm_median_s"]
        ratio_cpu = eph["warm_cpu_overhead_s"] / max(loc["warm_cpu_overhead_s"], 0.01)
        result["ratio_warm_overhead_ephemeral_over_local"] = round(ratio_overhead, 1)
        result["ratio_warm_command_ephemeral_over_local"] = round(ratio_command, 2)
        result["ratio_warm_cpu_overhead_ephemeral_over_local"] = round(ratio_cpu, 1)
        verdict = "met" if loc["warm_overhead_s"] < TARGET_WARM_OVERHEAD_S else "NOT met"
        print(f"ephemeral/local, warm: overhead {ratio_overhead:.1f}x, whole command {ratio_command:.2f}x, CPU "
              f"overhead {ratio_cpu:.1f}x; target warm overhead < {TARGET_WARM_OVERHEAD_S:.0f} s: {verdict}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
