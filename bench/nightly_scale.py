"""The whole nightly at real size: `caseforge run nightly --from-samples --samples DIR`, run as a user runs it,
on synthetic corpora made from the real samples with bad records in them, night after night, in one run.

    .venv/bin/python bench/nightly_scale.py [--quick] [--oyez N] [--hudoc N] [--cn N] [--increment 0.01]
                                            [--bad N] [--readers-every S] [--work DIR] [--keep]

Default sizes are the real ones (3,300 SCOTUS cases, 25,000 HUDOC English judgments, 50,000 Chinese judgments),
made by bench/scale.py's generators; the guide, its French table, the Bar Exam files and the Oyez legacy table
are the real samples. `--quick` is a CI-sized run (tiny corpora; minutes, not seconds: it runs four nightly
commands, answered by the test double itself: no record pass). The nights:

- first        the corpus into an empty warehouse
- unchanged    the same folder again
- 1% → full    the folder with 1% new documents in each scaled source (Oyez, HUDOC, CN) added
- 1% → empty   the same new documents (and the small real files every night reads) into an empty warehouse

Bad records. The bench first ingests the real samples (each source's sample folder, as `--from-samples` names
it) and counts what the parsers and gates quarantine: that is the samples' own rate. Each corpus and each
increment gets that share of bad records per scaled source, and at least `--bad` (default 1), of kinds the
bad-input tests use: an Oyez case file with a wrongly typed field (timeline "x"), a HUDOC body cut inside its
§ 44 with its tail garbled (no operative part), a Chinese judgment whose case number says 1930 (case_year
outside the gate's 1949–2100).

Model answers. The nightly's builders and evaluations run as the nightly runs them, with the models named as
its defaults name them, on the `replay` backend (CASEFORGE_CONFIG, CASEFORGE_REPLAY_FILE), so the figures are
caseforge's own cost and no model's. The replay file is recorded first: the same nights on the same corpora
(HUDOC cut to its first documents: no builder request reads a synthetic judgment) with the `openai` backend
against a loopback test double (`SchemaAnswerDouble`, never a model) that answers each request with JSON that
fits its schema, then `caseforge llm export-replay`. A request the replay file lacks fails its stage
(ReplayMiss) and this bench stops saying so.

Measured per night: wall seconds; CPU seconds (user + system) of the nightly process (os.wait4, its
children included) and of the local Prefect server (/proc/PID/stat, before and after: the server is started for the
run with `caseforge server start` in its own PREFECT_HOME, and its start-up is printed apart); peak resident
memory of each (the nightly's ru_maxrss; the server's VmHWM, reset before each night); payloads parsed per
source (files read minus `payloads_unchanged`); records quarantined and quarantine rows added; LLM calls;
exit status; database, archive and mirror size. The warehouse file's write lock, sampled every 10 ms with
fcntl F_GETLK (which asks, holds nothing, so the sampler never blocks the writer): the time the writer held
it, in how many holds, the longest; the time readers held it, and how often the night's writer found it held
and waited (its log line). Every `--readers-every` seconds a `caseforge sql` reader asks the warehouse a
question, as a user would during a night: its wall seconds, and whether the warehouse or the Parquet mirror
answered. Then the ratios the targets are about: unchanged / first (target ≤ 10%), 1% → full /
1% → empty (target ≤ 1.1×, issue 43), the peak memory of the 1% nights (within 1.2×), and the moonshot
(a 1% night at real size under 2 CPU-minutes, models excluded).
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.util
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import duckdb

HERE = Path(__file__).resolve().parent
CASEFORGE = Path(sys.executable).with_name("caseforge")


def load_scale():
    """bench/scale.py, whose synthetic corpus generators (and sizes and targets) this bench reuses."""
    spec = importlib.util.spec_from_file_location("caseforge_bench_scale", HERE / "scale.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


scale = load_scale()
REAL_SIZES = scale.REAL_SIZES
QUICK_SIZES = {"oyez": 8, "hudoc": 4, "cn": 200}
NIGHTS = ("first", "unchanged", "1% → full", "1% → empty")
TARGET_UNCHANGED = scale.TARGET_NOOP
TARGET_INCREMENT = 1.1         # issue 43: the whole night's (bench/scale.py's per-source ingests keep 1.3)
TARGET_INCREMENT_PEAK = 1.2
MOONSHOT_CPU_S = 120.0
RECORD_HUDOC = 250            # HUDOC documents in the record pass (no builder request reads a synthetic judgment)
LOCK_POLL_S = 0.01
SAMPLE_FOLDERS = {"echr_guides": "echr_guides", "barexam": "barexam"}     # the small real inputs, linked as they are


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---- the samples' own rate of bad records -----------------------------------------------------------------

def samples_rate(samples: Path, work: Path) -> dict[str, dict]:
    """Records each source's sample folder holds and how many its parser and gate quarantine, ingested as
    `--from-samples` ingests them (the work of each source's refresh, in this process, into a scratch
    warehouse): the samples' own rate of bad records."""
    from caseforge.settings import load_settings
    from caseforge.flows import registry
    from caseforge.tasks.barexam import ingest as barexam
    from caseforge.tasks.cn import ingest as cn
    from caseforge.tasks.guides import ingest as guides
    from caseforge.tasks.hudoc import ingest as hudoc
    from caseforge.tasks.oyez import ingest as oyez

    refresh = {"hudoc": hudoc.refresh, "guides": guides.refresh, "oyez": oyez.refresh, "cn": cn.refresh,
               "barexam": barexam.refresh}
    settings = load_settings(work / "samples-rate.duckdb")
    rates = {}
    for name in ("hudoc", "guides", "oyez", "cn", "barexam"):        # guides resolve against HUDOC's judgments
        kwargs = {arg: str(samples / rel) for arg, rel in registry.SOURCES[name].samples.items()}
        report = refresh[name](settings, **kwargs)
        records = report.counts.get("new", 0) + report.counts.get("changed", 0) + report.counts.get("quarantined", 0)
        rates[name] = {"records": records, "quarantined": report.counts.get("quarantined", 0),
                       "failures": len(report.failures)}
    return rates


# ---- corpora with bad records ------------------------------------------------------------------------------

CN_CASE_NUMBER = re.compile(r"([（(〔]\s*)(\d{4})(\s*[）)〕][^\s（(〔]{0,30}?号)")
HUDOC_CUT_AT = b"<span class='sB8D990E2'>44</span>"


def spoil_oyez(folder: Path, index: int, first: int) -> str:
    """The case file of synthetic case `index` with a wrongly typed field (timeline "x"): quarantined at parse."""
    [path] = folder.glob(f"*.syn-{index}.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["timeline"] = "x"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path.name


def spoil_hudoc(folder: Path, index: int, first: int) -> str:
    """The body of synthetic judgment `index` cut inside § 44, its tail read as cp1252 (mojibake): no operative
    part, refused (tests/samples/test_hudoc_bad_input.py's truncated garbled body)."""
    path = folder / "html" / f"001-{700000 + index}.html"
    body = path.read_bytes()
    start = body.index(HUDOC_CUT_AT)
    tail = body[start:start + 2500].decode("utf-8").encode("utf-8").decode("cp1252", errors="replace")
    path.write_bytes(body[:start] + tail.encode("utf-8"))
    return path.name


def spoil_cn(folder: Path, index: int, first: int) -> str:
    """Synthetic judgment `index` (or the next one in its dump whose text has a case number: about half the
    sample texts have none) with its case number's year made 1930: case_year outside the gate's 1949–2100. The
    Chinese parser itself says which texts it reads 1930 from."""
    from caseforge.tasks.cn.records import parse_record, record_from_dict

    start = first + (index - first) // scale.CN_PER_FILE * scale.CN_PER_FILE     # bench/scale.py's dump files
    path = folder / f"dump-{start:08d}.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    for offset in range(len(lines)):
        number = (index - start + offset) % len(lines)
        record = json.loads(lines[number])
        spoiled = CN_CASE_NUMBER.sub(lambda m: m.group(1) + "1930" + m.group(3), record["full_text"])
        if parse_record(record_from_dict({**record, "full_text": spoiled}))["case_year"] == 1930:
            record["full_text"] = spoiled
            lines[number] = json.dumps(record, ensure_ascii=False)
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            return f"{path.name} line {number + 1} ({record['doc_id']})"
    raise SystemExit(f"bench: no judgment with a case number in {path}")


SPOIL = {"oyez": spoil_oyez, "hudoc": spoil_hudoc, "cn": spoil_cn}
CORPUS_FOLDER = {"oyez": Path("oyez") / "cases", "hudoc": Path("hudoc"), "cn": Path("cn")}


def bad_indices(first: int, count: int, bad: int) -> list[int]:
    """`bad` documents spread evenly over [first, first + count), never more than half of them (a batch with more
    than half its rows failing is rejected whole: another measurement)."""
    bad = min(bad, count // 2)
    return [first + (2 * k + 1) * count // (2 * bad) for k in range(bad)]


def make_corpus(samples: Path, root: Path, first: dict[str, int], sizes: dict[str, int], bad: dict[str, int]
                ) -> dict[str, list[str]]:
    """A samples-shaped folder: documents first[s] .. first[s] + sizes[s] of each scaled source made by
    bench/scale.py, `bad[s]` of them spoiled, and the small real inputs linked. Returns what was spoiled."""
    spoiled = {}
    for source, count in sizes.items():
        folder = root / CORPUS_FOLDER[source]
        scale.CORPORA[source](samples, folder, first[source], count)
        spoiled[source] = [SPOIL[source](folder, i, first[source])
                           for i in bad_indices(first[source], count, bad[source])]
    link_fixed_inputs(samples, root)
    return spoiled


def link_fixed_inputs(samples: Path, root: Path) -> None:
    """The real inputs every night reads as they are: the Oyez legacy table, the guide and its French table,
    the Bar Exam files."""
    (root / "oyez").mkdir(parents=True, exist_ok=True)
    (root / "oyez" / "legacy_justice_table.csv").symlink_to(samples / "oyez" / "legacy_justice_table.csv")
    for name, rel in SAMPLE_FOLDERS.items():
        (root / name).symlink_to(samples / rel)


def link_documents(source_root: Path, target_root: Path, hudoc_limit: int | None = None) -> int:
    """Each document file of the scaled sources under `source_root` linked at the same place under
    `target_root` (the 1% night: the stored corpus plus the new documents, under the names they had);
    HUDOC's cut to its first `hudoc_limit` documents when given."""
    linked = 0
    for source, rel in CORPUS_FOLDER.items():
        base = source_root / rel
        for path in sorted(p for p in base.rglob("*") if p.is_file()):
            relative = path.relative_to(base)
            if source == "hudoc" and hudoc_limit is not None and hudoc_index(relative) >= hudoc_limit:
                continue
            target = target_root / rel / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(path.resolve())
            linked += 1
    return linked


def hudoc_index(relative: Path) -> int:
    """The synthetic document number of a HUDOC body (html/001-7NNNNN.html) or the first of a metadata page."""
    number = int(relative.stem.split("-")[-1])
    return number - 700000 if relative.parts[0] == "html" else number


def payload_files(root: Path) -> dict[str, int]:
    """Files each source reads from a samples-shaped folder (what a night archives and hashes)."""
    def count(path: Path) -> int:
        return sum(1 for p in path.rglob("*") if p.is_file()) if path.is_dir() else int(path.is_file())

    return {"oyez": count(root / "oyez" / "cases") + 1, "hudoc": count(root / "hudoc"), "cn": count(root / "cn"),
            "guides": count(root / "echr_guides"), "barexam": count(root / "barexam")}


# ---- model answers: a test double for the record pass ------------------------------------------------------

ENGLISH = ["The court held that the {w} rule applied to the dispute before it.",
           "The lower court had read the {w} provision too narrowly, the justices said.",
           "A state may not burden the {w} interest without a reason the law accepts.",
           "The judgment turned on whether the {w} requirement had been met in this case.",
           "The applicant argued that the {w} measure interfered with private and family life.",
           "The authorities gave relevant and sufficient reasons for the {w} decision.",
           "Domestic remedies for the {w} complaint had not been exhausted at that time.",
           "The majority found the {w} evidence enough to support the verdict below."]
CHINESE = ["本院认为，{w}的事实清楚，证据确实充分，应予支持。",
           "经审理查明，双方就{w}一事发生争议，原告据此提起诉讼。",
           "被告辩称，{w}并非其真实意思表示，请求驳回原告的诉讼请求。",
           "依照相关法律规定，{w}的请求于法有据，本院予以采纳。"]
CJK = re.compile(r"[\u4e00-\u9fff]{2,4}")
WORD = re.compile(r"\b[a-z]{6,12}\b")


class SchemaAnswerDouble:
    """Test double of a model behind an OpenAI-compatible endpoint (caseforge.llm.doubles' loopback server):
    answers each request with JSON that fits the request's schema — sentences from a fixed bank with a word
    of the prompt in them, enum values, scores, booleans chosen by a hash of the request — or, asked for free
    text, a few such sentences. Deterministic: the same request gets the same answer. Never a model."""

    def __call__(self, body: dict, call_number: int):
        from caseforge.llm.doubles import chat_reply

        prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
        seed = hashlib.sha256(prompt.encode("utf-8")).digest()
        schema = (body.get("structured_outputs") or {}).get("json") or \
            ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or \
            (body.get("response_format") or {}).get("schema")
        chinese = bool(CJK.search(prompt))
        words = CJK.findall(prompt) if chinese else WORD.findall(prompt.lower())
        if schema is None:
            text = "".join(self.sentence(seed, f"text{k}", words, chinese) for k in range(4)) if chinese else \
                " ".join(self.sentence(seed, f"text{k}", words, chinese) for k in range(4))
            return chat_reply(text)
        value = self.fill(schema, schema, "", seed, words, chinese)
        return chat_reply(json.dumps(value, ensure_ascii=False))

    @staticmethod
    def pick(seed: bytes, path: str, n: int) -> int:
        return int.from_bytes(hashlib.sha256(seed + path.encode()).digest()[:4], "big") % max(n, 1)

    def sentence(self, seed: bytes, path: str, words: list[str], chinese: bool) -> str:
        bank = CHINESE if chinese else ENGLISH
        word = words[self.pick(seed, path + "w", len(words))] if words else ("合同" if chinese else "statutory")
        return bank[self.pick(seed, path, len(bank))].format(w=word)

    def fill(self, node: dict, root: dict, path: str, seed: bytes, words: list[str], chinese: bool):
        if "$ref" in node:
            name = node["$ref"].split("/")[-1]
            return self.fill(root.get("$defs", {}).get(name, {}), root, path, seed, words, chinese)
        for key in ("anyOf", "oneOf"):
            if key in node:
                options = [o for o in node[key] if o.get("type") != "null"] or node[key]
                return self.fill(options[0], root, path, seed, words, chinese)
        if "const" in node:
            return node["const"]
        if "enum" in node:
            values = node["enum"]
            if all(isinstance(v, int) for v in values) and len(values) > 2:      # a score: the upper half
                upper = sorted(values)[len(values) // 2:]
                return upper[self.pick(seed, path, len(upper))]
            return values[self.pick(seed, path, len(values))]
        kind = node.get("type")
        if kind == "object":
            return {name: self.fill(sub, root, f"{path}.{name}", seed, words, chinese)
                    for name, sub in (node.get("properties") or {}).items()}
        if kind == "array":
            items = node.get("items") or {}
            low, high = node.get("minItems", 1), node.get("maxItems", 3)
            count = max(low, min(high, 1 + self.pick(seed, path + "n", 3)))
            if items.get("type") == "integer":
                return list(range(1, count + 1))
            return [self.fill(items, root, f"{path}[{k}]", seed, words, chinese) for k in range(count)]
        if kind == "boolean":
            return self.pick(seed, path, 2) == 0
        if kind == "integer":
            low, high = node.get("minimum", 1), node.get("maximum", max(node.get("minimum", 1), 5))
            return high - self.pick(seed, path, 2) if high > low else low
        if kind == "number":
            return 0.5
        text = self.sentence(seed, path, words, chinese)
        if "question" in path and not chinese:
            text = text.rstrip(".") + ", and why?"
        if node.get("maxLength"):
            text = text[:node["maxLength"]]
        return text


# ---- the local Prefect server ------------------------------------------------------------------------------

def server_pid(env: dict) -> int | None:
    out = subprocess.run([str(CASEFORGE), "server", "status", "--format", "json"], env=env, capture_output=True,
                         text=True)
    try:
        state = json.loads(out.stdout).get("server")
    except ValueError:
        return None
    return state["pid"] if state else None


def cpu_of(pid: int | None) -> float:
    """CPU seconds (user + system) a process has used, with its children that ended (/proc/PID/stat: utime,
    stime, cutime, cstime; psutil reads the same and is not a dependency of caseforge)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / os.sysconf("SC_CLK_TCK")


def peak_mb_of(pid: int | None, reset: bool = False) -> float:
    """A process's resident high-water mark (VmHWM) in MB; `reset` starts a new one (/proc/PID/clear_refs)."""
    if pid is None:
        return 0.0
    try:
        if reset:
            Path(f"/proc/{pid}/clear_refs").write_text("5")
        match = re.search(r"VmHWM:\s+(\d+)", Path(f"/proc/{pid}/status").read_text())
    except OSError:
        return 0.0
    return int(match.group(1)) / 1024 if match else 0.0


# ---- the warehouse's lock, and readers during the night --------------------------------------------------------

FLOCK = "hhqqi"          # struct flock on Linux x86_64/aarch64: l_type, l_whence, l_start, l_len, l_pid


def lock_holder(path: Path) -> tuple[str, int] | None:
    """Who holds the DuckDB file's lock ('write' or 'read', pid), asked with F_GETLK: nothing is locked."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        answer = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(FLOCK, fcntl.F_WRLCK, 0, 0, 0, 0))
    except OSError:
        return None
    finally:
        os.close(fd)
    kind, _, _, _, pid = struct.unpack(FLOCK, answer)
    if kind == fcntl.F_UNLCK:
        return None
    return ("write" if kind == fcntl.F_WRLCK else "read", pid)


@dataclass
class LockWatch:
    """Samples the warehouse file's lock every LOCK_POLL_S seconds while a night runs."""
    db: Path
    writer_pid: int = 0
    holds: list[float] = field(default_factory=list)      # seconds of each continuous hold by the writer
    reader_s: float = 0.0                                 # seconds a reader held the file
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> "LockWatch":
        self._thread = threading.Thread(target=self._run, name="lock-watch", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        since = None
        last = time.monotonic()
        while not self._stop.is_set():
            holder = lock_holder(self.db)
            now = time.monotonic()
            writing = holder is not None and holder[0] == "write" and (not self.writer_pid or holder[1] == self.writer_pid)
            if holder is not None and holder[0] == "read":
                self.reader_s += now - last
            if writing and since is None:
                since = now
            elif not writing and since is not None:
                self.holds.append(now - since)
                since = None
            last = now
            self._stop.wait(LOCK_POLL_S)
        if since is not None:
            self.holds.append(time.monotonic() - since)

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()


@dataclass
class Readers:
    """A `caseforge sql` reader every `every_s` seconds while a night runs: what it waited, who answered."""
    db: Path
    env: dict
    every_s: float
    answers: list[dict] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> "Readers":
        if self.every_s > 0:
            self._thread = threading.Thread(target=self._run, name="readers", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            started = time.monotonic()
            out = subprocess.run([str(CASEFORGE), "sql", "--db", str(self.db), "--format", "csv",
                                  "SELECT count(*) AS runs FROM ops.runs"], env=self.env, capture_output=True,
                                 text=True)
            wall = time.monotonic() - started
            if self._stop.is_set() and out.returncode != 0:
                break                              # asked as the night ended: not a night's answer
            note = out.stderr.strip().splitlines()
            self.answers.append({"wall_s": wall, "rc": out.returncode,
                                 "from": "mirror" if "mirror" in out.stderr.lower() and out.returncode == 0 else
                                 ("warehouse" if out.returncode == 0 else "error"),
                                 "note": note[-1][:200] if note else ""})

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()


# ---- one night -------------------------------------------------------------------------------------------

def size_mb(path: Path) -> float:
    return scale._size_mb(path)


def run_night(name: str, db: Path, samples_root: Path, env: dict, readers_every_s: float, log: Path) -> dict:
    """`caseforge run nightly --from-samples --samples ROOT --db DB` in a child process, measured."""
    pid = server_pid(env)
    peak_mb_of(pid, reset=True)
    server_before = cpu_of(pid)
    watch = LockWatch(db)
    readers = Readers(db, env, readers_every_s)
    command = [str(CASEFORGE), "run", "nightly", "--from-samples", "--samples", str(samples_root), "--db", str(db)]
    started = time.monotonic()
    with log.open("w") as out:
        child = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        watch.writer_pid = child.pid
        watch.start()
        readers.start()
        _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - started
    readers.stop()
    watch.stop()
    child.returncode = os.waitstatus_to_exitcode(status)
    server_after = cpu_of(pid)
    night = {"night": name, "rc": child.returncode, "wall_s": wall, "nightly_cpu_s": usage.ru_utime + usage.ru_stime,
             "nightly_peak_mb": usage.ru_maxrss / 1024, "server_cpu_s": server_after - server_before,
             "server_peak_mb": peak_mb_of(pid), "lock_holds": watch.holds, "lock_reader_s": watch.reader_s,
             "readers": readers.answers, "log": str(log)}
    night["cpu_s"] = night["nightly_cpu_s"] + night["server_cpu_s"]
    # a writer that finds the file held logs one line and waits (caseforge.warehouse.connect)
    night["writer_waits"] = log.read_text(encoding="utf-8", errors="replace").count("(CASEFORGE_BUSY_WAIT_S)")
    night.update(read_night(db))
    files = payload_files(samples_root)
    night["payloads_read"] = files
    night["payloads_parsed"] = {s: max(0, files[s] - night["unchanged"].get(s, 0)) for s in files}
    settings_dir = db.parent
    night["db_mb"] = size_mb(db) + size_mb(db.with_name(db.name + ".wal"))
    night["archive_mb"] = size_mb(settings_dir / f"{db.stem}-archive")
    night["mirror_mb"] = size_mb((settings_dir / f"{db.stem}-parquet").resolve())
    return night


def read_night(db: Path) -> dict:
    """What the night recorded: its stages, each source's counts, LLM calls, quarantine rows it added."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        run_id, counts = con.execute("SELECT run_id, counts FROM ops.runs WHERE kind = 'nightly' "
                                     "ORDER BY run_id DESC LIMIT 1").fetchone()
        counts = json.loads(counts)
        stages = con.execute("SELECT stage, name, status, counts, duration_s, message FROM ops.nightly_stages "
                             "WHERE run_id = ? ORDER BY stage, name", [run_id]).fetchall()
        ingests = con.execute("SELECT target, counts FROM ops.runs WHERE kind = 'ingest' AND run_id > ?",
                              [run_id]).fetchall()
        added = con.execute("SELECT count(*) FROM ops.quarantine WHERE run_id >= ?", [run_id]).fetchone()[0]
    finally:
        con.close()
    per_source = {target: json.loads(c or "{}") for target, c in ingests}
    return {"run_id": run_id, "llm_calls": counts.get("llm_calls", 0), "cache_hits": counts.get("cache_hits", 0),
            "quarantined": {s: c.get("quarantined", 0) for s, c in per_source.items()},
            "unchanged": {s: c.get("payloads_unchanged", 0) for s, c in per_source.items()},
            "quarantine_rows_added": added,
            "stages": [{"stage": s, "name": n, "status": st, "duration_s": d, "message": m or ""}
                       for s, n, st, _, d, m in stages]}


def replay_misses(night: dict) -> list[str]:
    return [f"{s['stage']} {s['name']}: {s['message'][:300]}" for s in night["stages"] if "ReplayMiss" in s["message"]]


# ---- the record pass -------------------------------------------------------------------------------------------

def default_models() -> dict[str, str]:
    """The model of each role the nightly uses by default (caseforge/defaults.toml's llamacpp models), so that the
    requests the bench replays are the ones the nightly makes: a model's name is part of a request's identity."""
    import tomllib

    from caseforge.settings_file import DEFAULTS_FILE

    return tomllib.loads(DEFAULTS_FILE.read_text(encoding="utf-8"))["llm"]["models"]["llamacpp"]


def settings_file(path: Path, backend: str, options: dict | None = None) -> Path:
    """A settings file that gives every role `backend` with the nightly's default model names."""
    lines = ["[llm]", f'backend = "{backend}"', f"[llm.models.{backend}]"]
    lines += [f'{role} = "{model}"' for role, model in default_models().items()]
    if options:
        lines.append(f"[llm.backends.{backend}.options]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in options.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def base_env(prefect_home: Path, config: Path) -> dict:
    env = {**os.environ, "PREFECT_HOME": str(prefect_home), "CASEFORGE_CONFIG": str(config),
           "CASEFORGE_PROGRESS": "plain", "CASEFORGE_PREFECT_SERVER": "local",
           "CASEFORGE_PREFECT_SERVER_IDLE_S": "7200"}
    for name in ("PREFECT_API_URL", "CASEFORGE_LLM_BACKEND", "CASEFORGE_LLM_MODEL", "CASEFORGE_REPLAY_FILE"):
        env.pop(name, None)
    return env


def start_server(env: dict) -> dict:
    started = time.monotonic()
    usage_before = os.times()
    out = subprocess.run([str(CASEFORGE), "server", "start", "--idle-timeout", "7200"], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"bench: the local Prefect server did not start: {out.stderr.strip()[-1000:]}")
    usage_after = os.times()
    pid = server_pid(env)
    return {"wall_s": time.monotonic() - started, "pid": pid, "server_cpu_s": cpu_of(pid),
            "command_cpu_s": (usage_after.children_user - usage_before.children_user)
            + (usage_after.children_system - usage_before.children_system)}


def stop_server(env: dict) -> None:
    subprocess.run([str(CASEFORGE), "server", "stop", "--force"], env=env, capture_output=True, text=True)


Plan = list[tuple[str, Path, Path, Callable[[], object] | None]]    # night, warehouse, samples root, before it


def answer_double():
    """The loopback OpenAI-compatible server that answers every request with SchemaAnswerDouble, started."""
    from caseforge.llm.doubles import ScriptedOpenAIServerDouble

    return ScriptedOpenAIServerDouble(SchemaAnswerDouble(), models=tuple(sorted(set(default_models().values())))).start()


def double_settings(work: Path, double) -> Path:
    return settings_file(work / "record.toml", "openai", {"base_url": double.base_url, "api_key": "double"})


def record_answers(plan: Plan, work: Path, prefect_home: Path, out: Path) -> dict:
    """The nights of `plan` with the openai backend against the loopback answer double, then every cached answer
    of each warehouse exported and merged into one replay file at `out`."""
    double = answer_double()
    env = base_env(prefect_home, double_settings(work, double))
    records: dict[str, str] = {}
    try:
        for number, (name, db, root, before) in enumerate(plan, start=1):
            db.parent.mkdir(parents=True, exist_ok=True)
            if before is not None:
                before()
            night = run_night(name, db, root, env, 0, work / f"record-night-{number}.log")
            failed = [f"{s['stage']} {s['name']}" for s in night["stages"] if s["status"] == "failed"]
            say(f"record pass, night {name}: exit {night['rc']}, {night['llm_calls']} LLM calls, failed stages: "
                f"{', '.join(failed) or 'none'}")
        for db in dict.fromkeys(db for _, db, _, _ in plan):
            part = work / f"replay-{db.parent.name}.jsonl"
            done = subprocess.run([str(CASEFORGE), "llm", "export-replay", "--db", str(db), "--out", str(part)],
                                  env=env, capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"bench: export-replay of {db} failed: {done.stderr.strip()[-1000:]}")
            if part.exists():
                for line in part.read_text(encoding="utf-8").splitlines():
                    if line.strip():
                        records.setdefault(json.loads(line)["identity"], line)
    finally:
        double.stop()
    out.write_text("".join(line + "\n" for line in records.values()), encoding="utf-8")
    return {"answers": len(records), "double_calls": double.calls}


# ---- the run ---------------------------------------------------------------------------------------------------

def print_nights(nights: list[dict], server_start: dict) -> None:
    print(f"local Prefect server start (before the first night, not in any night): {server_start['wall_s']:.1f} s, "
          f"server CPU {server_start['server_cpu_s']:.2f} s, `caseforge server start` CPU "
          f"{server_start['command_cpu_s']:.2f} s")
    print()
    print("| night | exit | wall s | CPU s (all) | nightly CPU s | server CPU s | nightly peak MB | server peak MB |"
          " payloads read | payloads parsed (oyez/hudoc/cn/guides/barexam) | quarantined | quarantine rows added |"
          " LLM calls | database / archive / mirror MB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    order = ("oyez", "hudoc", "cn", "guides", "barexam")
    for n in nights:
        parsed = "/".join(f"{n['payloads_parsed'].get(s, 0):,}" for s in order)
        print(f"| {n['night']} | {n['rc']} | {n['wall_s']:.1f} | {n['cpu_s']:.2f} | {n['nightly_cpu_s']:.2f} | "
              f"{n['server_cpu_s']:.2f} | {n['nightly_peak_mb']:,.0f} | {n['server_peak_mb']:,.0f} | "
              f"{sum(n['payloads_read'].values()):,} | {parsed} | {sum(n['quarantined'].values())} | "
              f"{n['quarantine_rows_added']} | {n['llm_calls']} | "
              f"{n['db_mb']:,.0f} / {n['archive_mb']:,.0f} / {n['mirror_mb']:,.0f} |")
    print()
    print("| night | writer held the file s | share of wall | holds | longest hold s | readers: answered by "
          "warehouse / mirror / error | reader wall s: median, longest | readers held the file s | "
          "writer waited for a holder | stages not succeeded |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n in nights:
        holds = n["lock_holds"]
        walls = sorted(r["wall_s"] for r in n["readers"])
        by = {k: sum(r["from"] == k for r in n["readers"]) for k in ("warehouse", "mirror", "error")}
        median = f"{walls[len(walls) // 2]:.1f}, {walls[-1]:.1f}" if walls else "-"
        problems = ", ".join(f"{s['stage']} {s['name']} {s['status']}" for s in n["stages"]
                             if s["status"] not in ("succeeded", "skipped")) or "none"
        print(f"| {n['night']} | {sum(holds):.1f} | {sum(holds) / n['wall_s']:.0%} | {len(holds)} | "
              f"{max(holds, default=0):.1f} | {by['warehouse']} / {by['mirror']} / {by['error']} | {median} | "
              f"{n['lock_reader_s']:.1f} | {n['writer_waits']} | {problems} |")
    errors = [(n["night"], r["note"]) for n in nights for r in n["readers"] if r["from"] == "error"]
    if errors:
        print()
        print("readers answered with an error: " + "; ".join(f"{night}: {note}" for night, note in errors))


def print_ratios(nights: dict[str, dict], quick: bool) -> None:
    first, unchanged, full, empty = (nights[name] for name in NIGHTS)
    ratio_unchanged = unchanged["cpu_s"] / first["cpu_s"]
    ratio_increment = full["cpu_s"] / empty["cpu_s"]
    ratio_peak = full["nightly_peak_mb"] / empty["nightly_peak_mb"]
    print()
    print("| ratio | measured | target | |")
    print("| --- | --- | --- | --- |")
    print(f"| unchanged / first, CPU (all processes) | {ratio_unchanged:.1%} | ≤ 10% | "
          f"{'met' if ratio_unchanged <= TARGET_UNCHANGED else 'MISSED'} |")
    print(f"| 1% → full / 1% → empty, CPU (all processes) | {ratio_increment:.2f}× | ≤ {TARGET_INCREMENT}× | "
          f"{'met' if ratio_increment <= TARGET_INCREMENT else 'MISSED'} |")
    print(f"| 1% → full / 1% → empty, nightly peak memory | {ratio_peak:.2f}× "
          f"({full['nightly_peak_mb']:,.0f} vs {empty['nightly_peak_mb']:,.0f} MB) | within {TARGET_INCREMENT_PEAK}× | "
          f"{'met' if ratio_peak <= TARGET_INCREMENT_PEAK else 'MISSED'} |")
    print(f"| unchanged / first, wall | {unchanged['wall_s'] / first['wall_s']:.1%} | | |")
    verdict = "met" if full["cpu_s"] < MOONSHOT_CPU_S else f"MISSED by {full['cpu_s'] / MOONSHOT_CPU_S:.1f}×"
    print(f"| moonshot: 1% → full, CPU s (models excluded: replay) | {full['cpu_s']:.1f} | < 120 "
          f"{'(at real size; these are quick sizes)' if quick else ''} | {verdict} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="CI-sized corpora (minutes: four nightly commands, no record pass)")
    for source in REAL_SIZES:
        parser.add_argument(f"--{source}", type=int, help=f"{source} documents (default {REAL_SIZES[source]:,}, "
                                                          f"quick {QUICK_SIZES[source]})")
    parser.add_argument("--increment", type=float, default=None,
                        help="the new documents' share of the corpus (default 0.01; quick 0.25, so each source gets new ones)")
    parser.add_argument("--bad", type=int, default=1,
                        help="at least this many bad records per scaled source in the corpus and in each increment "
                             "(more where the samples' own rate gives more)")
    parser.add_argument("--readers-every", type=float, default=None, metavar="S",
                        help="a `caseforge sql` reader every S seconds during each night (default 30, quick 10; 0: none)")
    parser.add_argument("--work", type=Path, help="folder for corpora, warehouses and logs (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--json", type=Path, help="also write every measured figure to this file")
    args = parser.parse_args()

    samples = scale.samples_dir()
    if not samples.is_dir():
        raise SystemExit(f"bench: no samples at {samples} (set CASEFORGE_SAMPLES)")
    if not CASEFORGE.exists():
        raise SystemExit(f"bench: no caseforge command beside {sys.executable} (run `make setup`)")
    sizes = {s: getattr(args, s) or (QUICK_SIZES if args.quick else REAL_SIZES)[s] for s in REAL_SIZES}
    readers_every = args.readers_every if args.readers_every is not None else (10.0 if args.quick else 30.0)
    work = (args.work or Path(tempfile.mkdtemp(prefix="caseforge-nightly-scale-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("CASEFORGE_PROGRESS", "plain")
    measured_env = double = None
    try:
        say(f"work folder {work}; sizes {sizes}")
        rates = samples_rate(samples, work)
        say("samples' own rate: " + ", ".join(f"{s} {r['quarantined']} of {r['records']:,}" for s, r in rates.items()))
        increment_share = args.increment if args.increment is not None else (0.25 if args.quick else 0.01)
        added = {s: max(1, math.ceil(n * increment_share)) for s, n in sizes.items()}

        def bad_for(source: str, count: int) -> int:
            rate = rates[source]["quarantined"] / rates[source]["records"] if rates[source]["records"] else 0.0
            return max(args.bad, round(rate * count))

        corpus, increment = work / "corpus", work / "increment"
        for folder in (corpus, increment, work / "record"):
            shutil.rmtree(folder, ignore_errors=True)
        started = time.monotonic()
        spoiled = make_corpus(samples, corpus, dict.fromkeys(sizes, 0), sizes,
                              {s: bad_for(s, n) for s, n in sizes.items()})
        spoiled_inc = make_corpus(samples, increment, sizes, added, {s: bad_for(s, n) for s, n in added.items()})
        say(f"corpora made in {time.monotonic() - started:.0f} s; bad records: corpus {spoiled}, "
            f"increment {spoiled_inc}")

        # one local Prefect server for every night, started now: its start-up is in no night
        measured_env = base_env(work / "prefect", settings_file(work / "replay.toml", "replay"))
        replay = work / "replay.jsonl"
        measured_env["CASEFORGE_REPLAY_FILE"] = str(replay)
        server_start = start_server(measured_env)
        say(f"local Prefect server up (pid {server_start['pid']}) in {server_start['wall_s']:.1f} s")

        if args.quick:
            # quick sizes: the record pass would be the same nights again (HUDOC is not cut), so the measured
            # nights ask the double itself (the record pass runs in bench/disk_full_nightly.py's quick mode)
            double = answer_double()
            measured_env = base_env(work / "prefect", double_settings(work, double))
        else:
            # the record pass: the same nights on the same corpora (HUDOC cut short), answered by the double
            record = work / "record"
            record_root = record / "samples"
            link_documents(corpus, record_root, hudoc_limit=min(RECORD_HUDOC, sizes["hudoc"]))
            link_fixed_inputs(samples, record_root)
            say("record pass: the nights that ask models, answered by the test double SchemaAnswerDouble")
            recorded = record_answers([
                ("first", record / "full" / "cf.duckdb", record_root, None),
                ("1% → full", record / "full" / "cf.duckdb", record_root,
                 lambda: link_documents(increment, record_root)),
                ("1% → empty", record / "empty" / "cf.duckdb", increment, None)], record, work / "prefect", replay)
            say(f"record pass: {recorded['answers']} answers recorded ({recorded['double_calls']} calls to the "
                "double)")
            shutil.rmtree(record, ignore_errors=True)

        # the measured pass: the nights, answered from the replay file (quick: by the double)
        full_db, empty_db = work / "full" / "cf.duckdb", work / "empty" / "cf.duckdb"
        plan = [("first", full_db, corpus, None), ("unchanged", full_db, corpus, None),
                ("1% → full", full_db, corpus, lambda: link_documents(increment, corpus)),
                ("1% → empty", empty_db, increment, None)]
        nights = {}
        for number, (name, db, root, before) in enumerate(plan, start=1):
            db.parent.mkdir(parents=True, exist_ok=True)
            if before is not None:
                before()
            say(f"night {name}: caseforge run nightly --from-samples --samples {root} --db {db}")
            night = run_night(name, db, root, measured_env, readers_every, work / f"night-{number}.log")
            nights[name] = night
            say(f"night {name}: exit {night['rc']}, {night['wall_s']:.0f} s wall, {night['cpu_s']:.1f} CPU-s "
                f"(nightly {night['nightly_cpu_s']:.1f}, server {night['server_cpu_s']:.1f}), "
                f"peak {night['nightly_peak_mb']:,.0f} MB")
            misses = [] if args.quick else replay_misses(night)
            if misses:
                raise SystemExit("bench: the replay file lacks answers the night asked for (the record pass did not "
                                 "make the same requests):\n" + "\n".join(misses))
            if night["rc"] not in (0, 1):
                raise SystemExit(f"bench: night {name} ended with exit status {night['rc']}: see {night['log']}")

        if double is not None:
            recorded = {"answers": 0, "double_calls": double.calls}
        load = os.getloadavg()
        print(f"bench/nightly_scale.py: sizes {', '.join(f'{s} {n:,}' for s, n in sizes.items())}, increment "
              f"{increment_share:.0%} ({', '.join(f'{s} {n:,}' for s, n in added.items())} new), "
              f"{os.cpu_count()} CPUs, load average {load[0]:.1f} at the end")
        print("samples' own rate of quarantined records: " + ", ".join(
            f"{s} {r['quarantined']} of {r['records']:,}" for s, r in rates.items()))
        print(f"bad records: corpus {json.dumps(spoiled)}; increment {json.dumps(spoiled_inc)}")
        print(f"model answers: the test double SchemaAnswerDouble on loopback, {recorded['double_calls']} calls "
              "(quick mode: no record pass)" if args.quick else
              f"model answers: replay file of {recorded['answers']} answers recorded from the test double "
              "SchemaAnswerDouble (the nightly's builders and evaluations, its default model names)")
        print()
        print_nights(list(nights.values()), server_start)
        print_ratios(nights, args.quick)
        if args.json:
            args.json.write_text(json.dumps({"sizes": sizes, "added": added, "rates": rates, "spoiled": spoiled,
                                             "spoiled_increment": spoiled_inc, "recorded": recorded,
                                             "server_start": server_start, "nights": nights}, indent=1, default=str))
    finally:
        if measured_env is not None:
            stop_server(measured_env)
        if double is not None:
            double.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
