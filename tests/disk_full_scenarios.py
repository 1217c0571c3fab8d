"""A full disk at each stage (issue 43, item 3), as `caseforge` commands meet it: run inside a private mount
namespace (tests/small_disks.py) whose small tmpfs mounts are the disks, this driver runs one scenario and prints
what it saw as JSON: the failed command's exit status and its last line, the runs `status` shows, whether the
warehouse still opens, what a reader of the mirror, the published mirror or the release folder sees, and after the
space is freed the same command again, with digests of its tables and outputs beside an undisturbed run's.

    python tests/disk_full_scenarios.py SCENARIO WORK SAMPLES

Where each write is held until the disk is full, the command reads a named pipe (FIFO) among its inputs: it
blocks there, the driver fills the disk, then writes the input into the pipe (as tests/integration/test_run_kills.py
holds commands part-way). The disks:

- parse:     the archive folder (bodies written while parsing) is a full disk from the start
- load:      a HUDOC body arrives through a pipe; meanwhile the warehouse's disk is filled to 64 KiB free: the
             bodies' payload rows still fit, the gate's and load's transaction of their paragraphs does not
- mirror:    the Parquet mirror's generations folder is a full disk from the start
- publish:   [mirror] publish names a folder on a full disk
- release:   `caseforge export scotus --out` on a full disk
- llm cache: the replay file of `caseforge eval casegen` is a pipe; the warehouse's disk is filled before the
             answers come, so storing them in the LLM cache (ops.llm_calls) meets the full disk
"""
from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from small_disks import fill, files_digest, table_digests, unfill  # noqa: E402

LOAD_LEAVES = 64 * 1024

# scenario → its small disks: (folder under WORK, size); the driver mounts nothing itself
MOUNTS = {
    "parse": [("disk/cf-archive", "1m")],
    "load": [("disk", "64m"), ("disk/cf-archive", "64m")],
    "mirror": [("disk/cf-parquet.d", "1m")],
    "publish": [("published", "1m")],
    "release": [("releases", "1m")],
    "llm cache": [("disk", "64m"), ("disk/cf-archive", "64m")],
}


def caseforge(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "caseforge", *args], env=env or os.environ.copy(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finished(process: subprocess.Popen, timeout: float = 600) -> dict:
    out, err = process.communicate(timeout=timeout)
    said = [line for line in err.splitlines() if line.startswith("caseforge: ")]
    return {"exit": process.returncode, "said": said, "stderr_tail": err[-3000:]}


def run(*args: str, env: dict | None = None) -> dict:
    return finished(caseforge(*args, env=env))


def held_on_pipe(pipe: Path, content: bytes, before_release, process: subprocess.Popen, wait_s: float = 300) -> None:
    """Once `process` opens `pipe` for reading (it blocks there), `before_release()`, then `content` written into it
    and the pipe replaced by a file holding `content`."""
    deadline = time.monotonic() + wait_s
    while True:
        if process.poll() is not None:
            raise SystemExit(f"the command ended ({process.returncode}) before reading {pipe}: "
                             + process.stderr.read()[-2000:])
        try:
            writer = os.open(pipe, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    before_release()
    os.set_blocking(writer, True)
    try:
        os.write(writer, content)
    finally:
        os.close(writer)
    pipe.unlink()                       # a second read of the input (the archive reads a body again) finds a file
    pipe.write_bytes(content)


def status(db: Path) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "caseforge", "status", "--format", "json", "--db", str(db)],
                          capture_output=True, text=True, timeout=300)
    runs = json.loads(done.stdout)["runs"] if done.returncode == 0 else []
    return [{"kind": r["kind"], "target": r["target"], "status": r["status"], "message": r["message"]} for r in runs]


def opens(db: Path) -> str:
    """'yes', or why the warehouse does not open read-only."""
    import duckdb

    try:
        con = duckdb.connect(str(db), read_only=True)
        con.execute("SELECT count(*) FROM ops.runs").fetchone()
        con.close()
        return "yes"
    except Exception as exc:  # noqa: BLE001 - reported, the test says what it expects
        return f"{type(exc).__name__}: {exc}"


def mirror_seen(db: Path) -> dict:
    """What a reader of the local mirror finds: the generation its link names and whether all its files exist."""
    link = db.with_name(db.stem + "-parquet")
    if not link.exists():
        return {"generation": None}
    manifest = json.loads((link / "MIRROR.json").read_text())
    parts = [p["file"] for t in manifest.get("tables", {}).values() for p in t.get("parts", [])]
    return {"generation": link.resolve().name, "complete": all((link / f).is_file() for f in parts)}


def samples_subset(samples: Path, work: Path) -> dict[str, Path]:
    """Inputs of the scenarios: HUDOC's sample folder, ten Oyez cases."""
    oyez = work / "in" / "oyez"
    oyez.mkdir(parents=True, exist_ok=True)
    for path in sorted((samples / "oyez" / "cases").glob("*.json"))[:10]:
        shutil.copy(path, oyez / path.name)
    return {"hudoc": samples / "hudoc", "oyez": oyez}


def scenario_ingest(name: str, work: Path, inputs: dict, disk: Path, env: dict) -> dict:
    """parse, mirror, publish: `caseforge ingest hudoc` with one of its disks full from the start."""
    db = work / "disk" / "cf.duckdb"
    db.parent.mkdir(parents=True, exist_ok=True)
    fill(disk)
    seen = {"failed": run("ingest", "hudoc", "--from-dir", str(inputs["hudoc"]), "--db", str(db), env=env)}
    seen.update(opens=opens(db), status=status(db), mirror=mirror_seen(db),
                published=files_digest(work / "published"))
    unfill(disk)
    seen["again"] = run("ingest", "hudoc", "--from-dir", str(inputs["hudoc"]), "--db", str(db), env=env)
    reference = work / "reference" / "cf.duckdb"
    reference.parent.mkdir(parents=True)
    seen["reference"] = run("ingest", "hudoc", "--from-dir", str(inputs["hudoc"]), "--db", str(reference), env=env)
    seen["tables"] = [table_digests(db), table_digests(reference)]
    seen["mirror_after"] = mirror_seen(db)
    seen["status_after"] = status(db)
    return seen


def scenario_load(work: Path, inputs: dict, env: dict) -> dict:
    """HUDOC's samples and one more body, 001-999999.html, through a pipe: the command hashes every body before it
    stores one, so it blocks there with the judgments' metadata loaded; the warehouse's disk is then filled to
    LOAD_LEAVES free, room for the bodies' payload rows but not for their paragraphs' gate and load."""
    folder = work / "in" / "hudoc"
    shutil.copytree(inputs["hudoc"], folder)
    body = (inputs["hudoc"] / "html" / "001-192223.html").read_bytes()
    pipe = folder / "html" / "001-999999.html"
    os.mkfifo(pipe)
    db = work / "disk" / "cf.duckdb"
    process = caseforge("ingest", "hudoc", "--from-dir", str(folder), "--db", str(db), env=env)
    held_on_pipe(pipe, body, lambda: fill(db.parent, LOAD_LEAVES), process)
    seen = {"failed": finished(process)}
    seen.update(opens=opens(db), status=status(db))
    unfill(db.parent)
    seen["again"] = run("ingest", "hudoc", "--from-dir", str(folder), "--db", str(db), env=env)
    reference = work / "reference" / "cf.duckdb"
    reference.parent.mkdir(parents=True)
    seen["reference"] = run("ingest", "hudoc", "--from-dir", str(folder), "--db", str(reference), env=env)
    seen["tables"] = [table_digests(db), table_digests(reference)]
    seen["status_after"] = status(db)
    return seen


def scenario_release(work: Path, inputs: dict, env: dict) -> dict:
    db = work / "warehouse" / "cf.duckdb"
    db.parent.mkdir(parents=True)
    seen = {"ingest": run("ingest", "oyez", "--from-dir", str(inputs["oyez"]), "--db", str(db), env=env)}
    out = work / "releases" / "scotus"
    fill(out.parent)
    seen["failed"] = run("export", "scotus", "--out", str(out), "--db", str(db), env=env)
    seen["release_seen"] = sorted(p.name for p in out.parent.iterdir() if p.name != ".disk-filler")
    unfill(out.parent)
    seen["again"] = run("export", "scotus", "--out", str(out), "--db", str(db), env=env)
    reference = work / "reference-release"
    seen["reference"] = run("export", "scotus", "--out", str(reference), "--db", str(db), env=env)
    seen["files"] = [files_digest(out), files_digest(reference)]
    return seen


def scenario_llm_cache(work: Path, env: dict) -> dict:
    fixtures = HERE / "fixtures"
    sys.path.insert(0, str(fixtures / "casegen"))
    import scripted_double as double

    db = work / "disk" / "cf.duckdb"
    items = fixtures / "casegen" / "full_cases.jsonl"
    seen = {"build": run("build", "casegen", "--from-file", str(items), "--db", str(db), env=env)}
    pipe = work / "replay.jsonl"
    os.mkfifo(pipe)

    def evaluate(db_path: Path, replay: Path) -> subprocess.Popen:
        return caseforge("eval", "casegen", "--model", double.DRAFTER, "--llm", "replay", "--replay-file", str(replay),
                         "--judge-model", double.JUDGE, "--out-dir", str(work / "reports"), "--no-plots", "--db",
                         str(db_path), env=env)

    process = evaluate(db, pipe)
    held_on_pipe(pipe, double.REPLAY_FILE.read_bytes(), lambda: fill(db.parent), process)      # (a file after)
    seen["failed"] = finished(process)
    seen.update(opens=opens(db), status=status(db))
    unfill(db.parent)
    seen["again"] = finished(evaluate(db, double.REPLAY_FILE))
    reference = work / "reference" / "cf.duckdb"
    reference.parent.mkdir(parents=True)
    seen["reference_build"] = run("build", "casegen", "--from-file", str(items), "--db", str(reference), env=env)
    seen["reference"] = finished(evaluate(reference, double.REPLAY_FILE))
    seen["tables"] = [table_digests(db, ("curated", "eval")), table_digests(reference, ("curated", "eval"))]
    seen["status_after"] = status(db)
    return seen


def main() -> None:
    name, work, samples = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    env = os.environ.copy()
    inputs = samples_subset(samples, work)
    if name in ("parse", "mirror"):
        seen = scenario_ingest(name, work, inputs, work / MOUNTS[name][0][0], env)
    elif name == "publish":
        config = work / "caseforge.toml"
        config.write_text(f'[mirror]\npublish = "{work / "published"}"\n')
        seen = scenario_ingest(name, work, inputs, work / "published", {**env, "CASEFORGE_CONFIG": str(config)})
    elif name == "load":
        seen = scenario_load(work, inputs, env)
    elif name == "release":
        seen = scenario_release(work, inputs, env)
    else:
        seen = scenario_llm_cache(work, env)
    print(json.dumps(seen, default=str))


if __name__ == "__main__":
    main()
