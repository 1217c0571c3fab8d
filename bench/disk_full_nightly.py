"""A full disk at random points of the nightly (issue 43, item 3): `caseforge run nightly --from-samples` on the
samples, each time on a small disk (a tmpfs mounted in a private user and mount namespace, tests/small_disks.py) that
a filler fills at a random point of the night, so every night runs out of space somewhere along the way; then the
filler goes and the nightly runs again. A point is drawn at random (seeded) in one of two ways:

- `--by time` (the default): a moment drawn as a share of a night (below 95%) of the last whole night's wall time
  (the undisturbed night's, then the last point's failed night and the next one that did the rest: the machine's
  load moves); the filler takes the whole disk then, whatever stage is running (points spread over the night's
  stages as its time is); a night that ran faster and ended before its moment is counted apart
  (`night_ended_before_the_fill`);
- `--by bytes`: N bytes left free before the night starts, N below what an undisturbed night leaves on its disk
  (points spread as the night's writes are: most land in the sources, which write most of the bytes); should a
  night fit in the bytes left, it is counted apart (`fit_in_the_bytes_left`) when its own tables and releases are
  the undisturbed night's, and is a failure otherwise. (The
release card's quality-gate section is compared apart: it reports the batches of the run that last validated each
table, so a night that resumed another's work shows other counts there.)

    .venv/bin/python bench/disk_full_nightly.py [--points 100] [--quick] [--seed 43] [--work DIR] [--keep]

Each point must show: the night ends failed (exit 1) with one line naming the disk; no nightly recorded
`succeeded`; the warehouse opens (or none was made: the disk filled before the night made one); no partial release
(every release folder there verifies against its manifest) and no partial mirror generation (the mirror's link names a generation whose files are all there); and the next
night ends with the same tables (curated and eval, without run ids and times) and the same release files as the
undisturbed night. The builders and the CaseGen evaluation answer from a replay file recorded first from the schema
test double of bench/nightly_scale.py (never a model), as the nights of that bench do. `--quick`: 1 point (each
stage's own full disk is tests/integration/test_disk_full_stages.py's). Each point is written to points.jsonl in the
work folder as it ends; `--summarize WORK [WORK ...]` prints the report of the points that sweeps (stopped or not) finished, together.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from small_disks import files_digest, fill, in_small_disks, namespaces_refused, table_digests, unfill  # noqa: E402


def load_nightly_scale():
    """bench/nightly_scale.py: its replay recording (the schema test double), settings files and server."""
    spec = importlib.util.spec_from_file_location("caseforge_bench_nightly_scale", HERE / "nightly_scale.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module             # its dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def nightly(db: Path, samples: Path, env: dict, fill_after: float | None = None) -> dict:
    """The nightly on the samples into `db`; with `fill_after`, the disk of `db` is filled that many seconds in."""
    command = [sys.executable, "-m", "caseforge", "run", "nightly", "--from-samples", "--samples", str(samples),
               "--db", str(db), "--release-dir", str(db.parent / "releases")]
    with tempfile.TemporaryFile("w+") as stderr:       # not on the small disk
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
        filled = None
        if fill_after is not None:
            try:
                process.wait(timeout=fill_after)
            except subprocess.TimeoutExpired:
                filled = fill(db.parent.parent)
        code = process.wait(timeout=3600)
        stderr.seek(0)
        text = stderr.read()
    said = [line.removeprefix("caseforge: ") for line in text.splitlines() if line.startswith("caseforge: ")]
    return {"exit": code, "said": said, "tail": text[-1500:], "filled_bytes": filled}


def used_bytes(folder: Path) -> int:
    """The blocks of what is under `folder`, as du counts them: links not followed (the mirror is a link to its
    generation's folder), a file with several names once."""
    seen, total = set(), 0
    for root, folders, files in os.walk(folder):        # does not descend into linked folders
        for name in folders + files:
            found = os.lstat(os.path.join(root, name))
            if (found.st_dev, found.st_ino) not in seen:
                seen.add((found.st_dev, found.st_ino))
                total += found.st_blocks * 512
    return total


# The card's quality-gate section reports the batches of the run that last validated each table
# (sql/ops/quality_for_release.sql), not all the batches of its data: a night that resumes work another one began
# (after a kill or a full disk), or any incremental night, shows other counts there. It is compared apart.
CARD_GATE = re.compile(r"### Quality gate[^\n]*\n.*?(?=\n#)", re.S)


def releases_digest(folder: Path) -> dict:
    """Each release folder's files by sha256, its card without the quality-gate section (and the manifest
    without the card's line), and that section alone under `card quality gate`."""
    found = {}
    for release in sorted(p for p in folder.glob("*") if p.is_dir()):
        files = files_digest(release, skip=("README.md", "MANIFEST.sha256"))
        card = (release / "README.md").read_text(encoding="utf-8") if (release / "README.md").exists() else ""
        gate = CARD_GATE.search(card)
        files["README.md without its quality gate"] = hashlib.sha256(CARD_GATE.sub("", card).encode()).hexdigest()
        files["card quality gate"] = gate[0] if gate else ""
        manifest = release / "MANIFEST.sha256"
        lines = manifest.read_text(encoding="utf-8").splitlines() if manifest.exists() else []
        files["MANIFEST.sha256 without the card"] = sorted(line for line in lines if not line.endswith("  README.md"))
        found[release.name] = files
    return found


NONE_MADE = "none made"      # the disk filled before the night had made its warehouse: nothing there to open


def visible_state(db: Path) -> dict:
    """What a reader sees after a night: the nightly runs recorded, the warehouse opening, each release folder
    verifying against its manifest, and the mirror's generation complete."""
    from caseforge.release.writer import verify_release

    state = {"opens": "yes", "nightly": [], "partial": []}
    if not db.exists():
        state["opens"] = NONE_MADE
    try:
        import duckdb

        if not db.exists():
            raise FileNotFoundError(db)
        con = duckdb.connect(str(db), read_only=True)
        state["nightly"] = [s for (s,) in con.execute("SELECT status FROM ops.runs WHERE kind = 'nightly'").fetchall()]
        con.close()
    except FileNotFoundError:
        pass
    except Exception as exc:  # noqa: BLE001 - reported per point
        state["opens"] = f"{type(exc).__name__}: {exc}"
    for release in sorted((db.parent / "releases").glob("*")):
        if release.is_dir() and not release.name.startswith("."):        # a staging folder is not a release
            problems = verify_release(release)
            if problems:
                state["partial"].append(f"{release}: {problems[0]}")
    link = db.with_name(db.stem + "-parquet")
    if link.exists():
        manifest = json.loads((link / "MIRROR.json").read_text())
        missing = [p["file"] for t in manifest.get("tables", {}).values() for p in t.get("parts", [])
                   if not (link / p["file"]).is_file()]
        if missing:
            state["partial"].append(f"mirror generation {link.resolve().name} lacks {missing[:3]}")
    return state


def differences(db: Path, expected: dict) -> tuple[list[str], list[str]]:
    """What differs from the undisturbed night: the tables and release files (the card's quality-gate section
    apart), and the releases whose quality-gate section differs."""
    tables, releases = table_digests(db, ("curated", "eval")), releases_digest(db.parent / "releases")
    differs = sorted([t for t in set(tables) | set(expected["tables"]) if tables.get(t) != expected["tables"].get(t)] +
                     [f"release {r} {name}" for r in set(releases) | set(expected["releases"])
                      for name in set(releases.get(r, {})) | set(expected["releases"].get(r, {}))
                      if name != "card quality gate"
                      and releases.get(r, {}).get(name) != expected["releases"].get(r, {}).get(name)])
    gate_differs = sorted(r for r in releases if releases[r].get("card quality gate")
                          != expected["releases"].get(r, {}).get("card quality gate"))
    return differs, gate_differs


def inside(args) -> None:
    """In the namespace, `args.disk` a tmpfs: every point, one JSON line each on stdout."""
    plan = json.loads(Path(args.plan).read_text())
    env = {**os.environ, **plan["env"]}
    samples, disk = Path(plan["samples"]), Path(args.disk)
    night_s = plan.get("night_s")                           # the last whole night's wall time (--by time)
    for number, drawn in enumerate(plan["points"], start=1):
        for path in disk.iterdir():
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        db = disk / "night" / "cf.duckdb"
        db.parent.mkdir()
        started = time.monotonic()
        if plan.get("by", "bytes") == "bytes":
            fill(disk, drawn)
            failed = nightly(db, samples, env)
            point = {"point": number, "free_bytes": drawn}
        else:
            moment = round(drawn * night_s, 1)
            failed = nightly(db, samples, env, fill_after=moment)
            point = {"point": number, "share": drawn, "fill_at_s": moment}
        point.update({"failed": failed, "after_failure": visible_state(db),
                      "failed_s": round(time.monotonic() - started, 1)})
        if failed["exit"] == 0 and (failed.get("filled_bytes") is not None or "free_bytes" in point):
            # the night ended 0 on a full disk (filled at its moment, or left its bytes): earned only if it needed no
            # more space, that is if its own tables and releases are the undisturbed night's
            point["own_differs"] = differences(db, plan["expected"])[0]
        unfill(disk)
        started = time.monotonic()
        point["next"] = nightly(db, samples, env)
        point["next_s"] = round(time.monotonic() - started, 1)
        if plan.get("by") == "time":        # a whole night at the machine's load now: one that ran to its end, or
            #                                 the failed part and the next night that did the rest
            night_s = point["failed_s"] if failed.get("filled_bytes") is None else point["failed_s"] + point["next_s"]
        point["after_next"] = visible_state(db)
        point["differs"], point["card_gate_differs"] = differences(db, plan["expected"])
        if point["differs"] and plan.get("keep_differing"):          # for a person to look at
            shutil.copytree(db.parent, Path(plan["keep_differing"]) / f"point-{number}", symlinks=True)
        line = json.dumps(point, default=str)
        with open(plan["log"], "a", encoding="utf-8") as log:       # each point as it ends (a long sweep)
            log.write(line + "\n")
        print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="1 point")
    parser.add_argument("--summarize", type=Path, nargs="+", metavar="WORK",
                        help="print the report of the points finished in each WORK (sweeps run with --keep, "
                             "stopped or not), together")
    parser.add_argument("--seed", type=int, default=43)
    parser.add_argument("--by", choices=("time", "bytes"), default="time",
                        help="draw each point as a moment of the night (default) or as the bytes left free")
    parser.add_argument("--work", type=Path, help="work folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work folder (and a copy of each point whose next night differs, in differing/)")
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--plan", help=argparse.SUPPRESS)
    parser.add_argument("--disk", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inside:
        inside(args)
        return
    if args.summarize:
        summarize(args.summarize)
        return
    points = 1 if args.quick else args.points
    scale = load_nightly_scale()
    samples = scale.scale.samples_dir()
    work = (args.work or Path(tempfile.mkdtemp(prefix="caseforge-disk-full-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    refused = namespaces_refused(work / "probe")
    if refused:
        raise SystemExit(f"bench: {refused}")
    env = None
    try:
        prefect_home = work / "prefect"
        replay = work / "replay.jsonl"
        env = scale.base_env(prefect_home, scale.settings_file(work / "replay.toml", "replay"))
        env["CASEFORGE_REPLAY_FILE"] = str(replay)
        scale.start_server(env)
        say("record pass: the nightly on the samples, answered by the schema test double")
        (work / "record").mkdir(exist_ok=True)
        scale.record_answers([("first", work / "record" / "cf.duckdb", samples, None)], work / "record", prefect_home,
                             replay)
        say("undisturbed night")
        reference = work / "reference" / "cf.duckdb"
        reference.parent.mkdir(parents=True)
        started = time.monotonic()
        undisturbed = nightly(reference, samples, env)
        takes = time.monotonic() - started
        needs = used_bytes(reference.parent)
        expected = {"tables": table_digests(reference, ("curated", "eval")),
                    "releases": releases_digest(reference.parent / "releases")}
        say(f"undisturbed night: exit {undisturbed['exit']}, {takes:.0f} s, {needs / 2**20:.1f} MiB on its disk")
        draw = random.Random(args.seed)
        # in the order drawn: a sweep stopped early has still covered the whole night
        drawn = ([round(draw.uniform(0, 0.95), 3) for _ in range(points)] if args.by == "time" else
                 [draw.randrange(0, int(needs * 0.95)) for _ in range(points)])
        plan = work / "plan.json"
        plan.write_text(json.dumps({"points": drawn, "by": args.by, "night_s": takes, "samples": str(samples),
                                    "expected": expected,
                                    "undisturbed": undisturbed,
                                    "log": str(work / "points.jsonl"),
                                    "keep_differing": str(work / "differing") if args.keep else None, "env": {
                                        k: env[k] for k in env if k.startswith(("CASEFORGE_", "PREFECT_"))}}))
        disk = work / "disk"
        size_mb = int(needs * 1.5 / 2**20) + 64
        unit = " of a night" if args.by == "time" else " bytes free"
        say(f"{points} points, from {min(drawn):,}{unit} to {max(drawn):,}{unit}, on a {size_mb} MiB tmpfs")
        started = time.monotonic()
        done = in_small_disks([(disk, f"{size_mb}m")], [sys.executable, str(Path(__file__).resolve()), "--inside",
                                                         "--plan", str(plan), "--disk", str(disk)],
                              env=env, timeout=24 * 3600)
        if done.returncode != 0:
            raise SystemExit(f"bench: the points did not run: {done.stderr[-3000:]}")
        results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        report(results, [undisturbed["exit"]], disk, time.monotonic() - started)
    finally:
        if env is not None:
            scale.stop_server(env)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def summarize(works: list[Path]) -> None:
    """The report of the points one or more sweeps finished (each one's points.jsonl, judged against its own
    undisturbed night, as its plan recorded)."""
    results, undisturbed, planned = [], [], 0
    for number, work in enumerate(works, start=1):
        plan = json.loads((work / "plan.json").read_text())
        log = work / "points.jsonl"
        found = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        results += [{**point, "disk": str(work / "disk"), "point": f"{number}.{point['point']}"
                     if len(works) > 1 else point["point"]} for point in found]
        undisturbed.append(plan["undisturbed"]["exit"])
        planned += len(plan["points"])
    if not results:
        raise SystemExit(f"bench: no finished point in {', '.join(str(w / 'points.jsonl') for w in works)}")
    print(f"({len(works)} sweep{'s' if len(works) > 1 else ''}: {len(results)} of {planned} points finished)")
    if len(works) > 1:
        print("; ".join(f"sweep {number}: {work}" for number, work in enumerate(works, start=1)))
    report(results, undisturbed, Path(), sum(p["failed_s"] + p["next_s"] for p in results))


def report(results: list[dict], undisturbed_exits: list[int], disk: Path, seconds: float) -> None:
    rows, summary = [], {"points": len(results), "failed_naming_the_disk": 0, "nightly_recorded_succeeded": 0,
                         "warehouse_opens": 0, "partial_visible": 0, "next_night_identical": 0,
                         "card_quality_gate_differs": 0, "night_ended_before_the_fill": 0,
                         "needed_no_space_after_the_fill": 0, "fit_in_the_bytes_left": 0}
    for point in results:
        if "fill_at_s" in point and point["failed"].get("filled_bytes") is None:
            # a faster night than the undisturbed one, done before its moment came: no full disk to judge
            summary["night_ended_before_the_fill"] += 1
            summary["points"] -= 1
            rows.append(f"| {point['point']} | {point['fill_at_s']} s in | {point['failed']['exit']} | the night "
                        f"ended before the disk was filled | - | - | - | - | {point['failed_s']} | - |")
            continue
        if "free_bytes" in point and point.get("own_differs") == [] and point["failed"]["exit"] == 0:
            # the bytes left were enough for this night: its own tables and releases are the undisturbed night's, no
            # full disk to judge (the draws stay below 95% of what the undisturbed night left, so it should not be)
            summary["fit_in_the_bytes_left"] += 1
            summary["points"] -= 1
            summary["partial_visible"] += bool(point["after_failure"]["partial"] or point["after_next"]["partial"])
            rows.append(f"| {point['point']} | {point['free_bytes']:,} bytes free | 0 | the night fit in the bytes "
                        f"left: its own results are the undisturbed night's | - | - | - | - | {point['failed_s']} | - |")
            continue
        if point.get("own_differs") == [] and point["failed"]["exit"] == 0:
            # filled after the night's last write that needed space (DuckDB reuses its file's free blocks): the
            # night's own tables and releases are the undisturbed night's, so its success was earned
            summary["needed_no_space_after_the_fill"] += 1
            summary["points"] -= 1
            summary["partial_visible"] += bool(point["after_failure"]["partial"] or point["after_next"]["partial"])
            rows.append(f"| {point['point']} | {point['fill_at_s']} s in ({point['share']:.0%}) | 0 | the night "
                        f"needed no more space: its own results are the undisturbed night's | - | - | - | - | "
                        f"{point['failed_s']} | - |")
            continue
        line = point["failed"]["said"][-1] if point["failed"]["said"] else ""
        named = point["failed"]["exit"] == 1 and f"no space left on {point.get('disk', disk)}" in line
        identical = not point["differs"]
        summary["failed_naming_the_disk"] += named
        summary["nightly_recorded_succeeded"] += "succeeded" in point["after_failure"]["nightly"]
        summary["warehouse_opens"] += point["after_failure"]["opens"] in ("yes", NONE_MADE)
        summary["partial_visible"] += bool(point["after_failure"]["partial"] or point["after_next"]["partial"])
        summary["next_night_identical"] += identical
        summary["card_quality_gate_differs"] += bool(point["card_gate_differs"])
        stage = line.split(": the disk is full", 1)[0] if "the disk is full" in line else line[:60]
        drawn = (f"{point['fill_at_s']} s in ({point['share']:.0%})" if "fill_at_s" in point else
                 f"{point['free_bytes']:,} bytes free")
        rows.append(f"| {point['point']} | {drawn} | {point['failed']['exit']} | {stage} | "
                    f"{'yes' if named else 'NO'} | {','.join(point['after_failure']['nightly'])} | "
                    f"{point['next']['exit']} | {'yes' if identical else 'NO: ' + ', '.join(point['differs'])} | "
                    f"{point['failed_s']} | {point['next_s']} |")
    print(f"bench/disk_full_nightly.py: {len(results)} points in {seconds / 60:.0f} minutes; the undisturbed "
          f"night{'s' if len(undisturbed_exits) > 1 else ''} exited {', '.join(map(str, undisturbed_exits))}")
    print()
    print("| point | disk filled | exit | stage named | disk named | nightly recorded | next night exit | "
          "next night identical | failed night s | next night s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    print()
    print(f"The release card's quality-gate section differed after {summary['card_quality_gate_differs']} of "
          f"{len(results)} points: it reports the batches of the run that last validated each table, and the next "
          "night validated only what the failed one had not loaded (compared apart; everything else is compared).")
    print()
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
