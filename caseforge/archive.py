"""The archive: every upstream payload, once per (source, key, content). ops.raw_payloads describes each one;
its body is a file named by its sha256 in the warehouse's archive folder (`<db>-archive/`, Settings.archive_dir).
Bodies stay out of the DuckDB file because DuckDB rewrites a table's last row group at every checkpoint after an
append: with the bodies in it, one new payload cost time and memory growing with everything archived."""
from __future__ import annotations

import hashlib
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import unquote, urlparse

import duckdb

from caseforge.atomic import write_atomically
from caseforge.settings import Settings, load_settings, variables_of
from caseforge.stage_report import KNOWN_PAYLOADS
from caseforge.stopping import check_stop
from caseforge.warehouse.statements import database_file, run_sql


def sha256_hex(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


@dataclass(frozen=True)
class Payload:
    source: str
    key: str
    url: str | None
    http_status: int | None
    content_type: str | None
    body: bytes
    sha256: str
    fetched_at: datetime


class RawArchive:
    """Stores payloads once per (source, key, content); never updates or deletes. `folder` holds the bodies
    (default: the warehouse's archive folder; a database without a file keeps them in ops.raw_payloads.body)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, folder: Path | None = None):
        self.con = con
        self.folder = folder if folder is not None else archive_folder(con)

    def _keep_body(self, sha256: str, body: bytes) -> bytes | None:
        """Write a body to its file (once: a content already there is not written again), before its row is,
        so no row ever names a missing body; returns what goes into the row's body column (None: the file)."""
        if self.folder is None:
            return body
        path = self.folder / sha256[:2] / sha256
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, body)
        return None

    def _body(self, sha256: str, column: bytes | None) -> bytes:
        if column is not None:
            return bytes(column)
        path = (self.folder or Path(".")) / sha256[:2] / sha256
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(f"the archived body {sha256} is missing: no file {path} (the archive folder "
                                    "must be kept, and copied, with the warehouse)") from None

    def _payload(self, row) -> Payload:
        return Payload(row[0], row[1], row[2], row[3], row[4], self._body(row[6], row[5]), row[6], row[7])

    def store(
        self,
        source: str,
        key: str,
        body: bytes,
        url: str | None = None,
        http_status: int | None = 200,
        content_type: str | None = None,
    ) -> tuple[Payload, bool]:
        """Archive a body; returns the payload and whether this content was new for the key."""
        check_stop()                     # every payload is a point where a run told to stop does stop
        digest = sha256_hex(body)
        now = datetime.now(timezone.utc)
        before = run_sql(self.con, "ops/payload_stored.sql", [source, key, digest]).fetchone()[0]
        if not before:
            run_sql(self.con, "ops/store_payload.sql",
                    {"source": source, "key": key, "sha256": digest, "url": url, "fetched_at": now,
                     "http_status": http_status, "content_type": content_type, "body": self._keep_body(digest, body)})
        payload = Payload(source, key, url, http_status, content_type, body, digest, now)
        return payload, not before

    def store_file(self, source: str, key: str, path: Path, content_type: str | None = None) -> tuple[Payload, bool]:
        return self.store(source, key, path.read_bytes(), url=path.resolve().as_uri(), content_type=content_type)

    def keys_of(self, source: str, sha256s: list[str]) -> dict[str, set[str]]:
        """The keys the archive holds each of these contents under, in one query."""
        found: dict[str, set[str]] = {}
        for sha, key in run_sql(self.con, "ops/payload_keys.sql", {"source": source, "sha256s": list(sha256s)}).fetchall():
            found.setdefault(sha, set()).add(key)
        return found

    def store_many(self, source: str, items: list[tuple[str, bytes, str | None, str | None]],
                   http_status: int | None = 200) -> list[tuple[Payload, bool]]:
        """Archive a batch of (key, body, url, content type) in one lookup and one write (a replayed folder's
        files, where one statement per file made the archive the bulk of a run with nothing new); returns each
        payload and whether its content was new for its key."""
        import pandas as pd

        check_stop()                     # as in store: a batch is a point where a run told to stop does stop
        now = datetime.now(timezone.utc)
        payloads = [Payload(source, key, url, http_status, content_type, body, sha256_hex(body), now)
                    for key, body, url, content_type in items]
        known = self.keys_of(source, sorted({p.sha256 for p in payloads}))
        new = list({(p.key, p.sha256): p for p in payloads if p.key not in known.get(p.sha256, ())}.values())
        if new:
            self.con.register("_payloads", pd.DataFrame(
                [(p.source, p.key, p.sha256, p.url, p.fetched_at, p.http_status, p.content_type,
                  self._keep_body(p.sha256, p.body)) for p in new],
                columns=["source", "key", "sha256", "url", "fetched_at", "http_status", "content_type", "body"]))
            try:
                run_sql(self.con, "ops/store_payloads.sql")
            finally:
                self.con.unregister("_payloads")
        return [(p, p.key not in known.get(p.sha256, ())) for p in payloads]

    def latest(self, source: str, key: str) -> Payload | None:
        row = run_sql(self.con, "ops/latest_payload.sql", [source, key]).fetchone()
        return None if row is None else self._payload(row)

    def by_sha(self, sha256: str) -> Payload | None:
        row = run_sql(self.con, "ops/payload_by_sha.sql", [sha256]).fetchone()
        return None if row is None else self._payload(row)


def limits_fingerprint() -> str:
    """The limits a parser refuses an input by (Settings.max_mb_*, max_elements_*, max_parse_s_*, max_zip_ratio),
    as one string: a payload refused by one is tried again when they change (ParsedPayloads). Like every limit
    here, from the current settings: those the run session was handed (caseforge.session), never read again."""
    settings = load_settings()
    return " ".join(f"{name}={getattr(settings, name)}" for name in sorted(Settings.model_fields)
                    if name.startswith(("max_mb_", "max_elements_", "max_parse_s_", "max_zip_ratio")))


def archive_folder(con: duckdb.DuckDBPyConnection) -> Path | None:
    """Where the bodies of this connection's warehouse live (Settings.archive_dir); None in memory."""
    database = database_file(con)
    return load_settings(database).archive_dir if database else None


# ---- what a parser already made of the archive: skip it before parsing ----

@dataclass
class ParsePlan:
    """What a run does with a set of payloads: `parse` them (in order), except those `skipped` (key → the
    records each gave when it was loaded); `remade` names the hashes among `parse` whose rows are already in
    curated (a new parser version, --reparse, or rows no longer as it left them): their rows are made again.
    `known` counts what the skipped payloads quarantined when they were loaded (records, payloads, since run)."""

    parse: list
    skipped: dict[str, int]
    remade: set[str]
    known: tuple[int, int, int | None] = (0, 0, None)

    def report_to(self, report, unchanged: str = "unchanged") -> None:
        """Count the payloads to parse (`payloads_parsed`), the skipped ones (`payloads_unchanged`), the records
        they hold under `unchanged`, and the known problems among them."""
        report.add("payloads_parsed", len(self.parse))
        if self.skipped:
            report.add("payloads_unchanged", len(self.skipped))
            report.add(unchanged, sum(self.skipped.values()))
        records, payloads, since = self.known
        if records:
            report.known_problems(records, payloads, since)


class ParsedPayloads:
    """ops.loaded_payloads for one source, parser and table: which payloads this parser version already turned
    into rows of curated.<table> that are still there as it made them, together with what it quarantined of
    them, so a run skips them before parsing (a night with nothing new reads the file list and hashes) whether
    or not they had bad records: a known problem costs its record once. A payload of a rejected batch (nothing of
    it landed) is not recorded: it is tried again, and fails again, every run until it is fixed.

    `parser` names the parser and its version, plus any option that changes the rows it makes (a changed
    version forces a parse); `reparse` parses everything (`--reparse`). `table` is the curated table whose
    `raw_sha256` column says which payload each row came from. What judged the records is fingerprinted: the
    table's gate suite (and those of `gated`, other tables the same payloads feed) and the limits a parser
    refuses an input by (size, elements, parse time, zip ratio): a payload with quarantined records is tried
    again when one of them changed (a suite fixed, a limit raised)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, source: str, parser: str, table: str, reparse: bool = False,
                 gated: tuple[str, ...] = ()):
        from caseforge.gate import suite_fingerprint

        self.con, self.source, self.parser, self.table, self.reparse = con, source, parser, table, reparse
        self.checks = hashlib.sha256(f"{suite_fingerprint(table, *gated)} {limits_fingerprint()}".encode()).hexdigest()

    def _with(self, name: str, rows: list[tuple], columns: list[str], statement: str, params: dict):
        import pandas as pd

        self.con.register(name, pd.DataFrame(rows, columns=columns))
        try:
            return run_sql(self.con, statement, params, identifiers={"table": self.table}).fetchall()
        finally:
            self.con.unregister(name)

    def plan(self, payloads: list) -> ParsePlan:
        """Split payloads (anything with .key and .sha256) into those to parse and those to skip."""
        if not payloads:
            return ParsePlan([], {}, set())
        found = {(key, sha): rest for key, sha, *rest in self._with(
            "_candidates", sorted({(p.key, p.sha256) for p in payloads}), ["key", "sha256"],
            "ops/parsed_payloads.sql", {"source": self.source, "parser": self.parser})}
        plan = ParsePlan([], {}, set())
        known_records, known_payloads, since = 0, 0, None
        for payload in payloads:
            records, present, quarantined, problems_since, checks = found[(payload.key, payload.sha256)]
            retry = self.reparse or (quarantined and checks != self.checks)
            if records is not None and not retry:
                plan.skipped[payload.key] = int(records)
                if quarantined:
                    known_records, known_payloads = known_records + int(quarantined), known_payloads + 1
                    if problems_since is not None:
                        since = problems_since if since is None else min(since, problems_since)
                continue
            plan.parse.append(payload)
            if present:
                plan.remade.add(payload.sha256)
        plan.known = (known_records, known_payloads, since)
        return plan

    def settle(self, run_id: int | None, loaded: dict, rejected: list, report=None) -> None:
        """Record the payloads this run parsed and gated (`loaded`: payload → the records it gave), with what it
        quarantined of each (known or new: ops/quarantine_seen.sql), and forget what was recorded for the keys
        of those whose batch was rejected (`rejected`); with `report`, count the recorded payloads holding known
        problems. A few statements, whatever the count."""
        rows = sorted({(p.key, p.sha256, int(n)) for p, n in loaded.items()})
        forget = {p.key for p in rejected} | {key for key, _, _ in rows}
        if forget:
            self._with("_keys", sorted((key,) for key in forget), ["key"], "ops/forget_parsed_payloads.sql",
                       {"source": self.source})
        if not rows:
            return
        run_sql(self.con, "ops/quarantine_seen.sql")
        self._with("_loaded", rows, ["key", "sha256", "records"], "ops/record_parsed_payloads.sql",
                   {"source": self.source, "parser": self.parser, "run_id": run_id, "checks": self.checks})
        if report is not None:
            [(payloads,)] = self._with("_loaded", rows, ["key", "sha256", "records"], "ops/known_loaded_payloads.sql",
                                       {"run_id": run_id})
            if payloads:
                report.add(KNOWN_PAYLOADS, int(payloads))

    def settle_batch(self, run_id: int | None, plan: ParsePlan, rows, outcome, report=None,
                     provisional: set[str] = frozenset()) -> None:
        """Settle the payloads a batch parsed: `rows` what it sent to the gate (a frame or row dicts; their
        raw_sha256 says whose), `outcome` the gate's LoadOutcome (None: nothing reached it, or a list of them:
        the batch went to the gate in parts). Every parsed payload is recorded, with what it quarantined, except
        those of a rejected batch and the `provisional` ones (hashes of payloads judged on something outside
        them that may still change, such as a body judged without its metadata row): tried again next run."""
        if hasattr(rows, "columns"):
            shas = rows["raw_sha256"] if "raw_sha256" in rows.columns else []
        else:
            shas = (row["raw_sha256"] for row in rows)
        records = Counter(shas)
        outcomes = outcome if isinstance(outcome, list) else [outcome]
        rejected = set(provisional).union(*(o.rejected_sha256 for o in outcomes if o is not None))
        self.settle(run_id, {p: records.get(p.sha256, 0) for p in plan.parse if p.sha256 not in rejected},
                    [p for p in plan.parse if p.sha256 in rejected], report)


# ---- size limits: what one upstream file or record may weigh before a parser is allowed to read it ----

MB = 1024 * 1024


def _limit(kind: str, source: str, what: str):
    """A limit of the current settings (Settings.max_<kind>_<source>_<what>, from CASEFORGE_MAX_<KIND>_<SOURCE>_<WHAT>):
    a run's are those its session was handed."""
    name = f"max_{kind}_{source}_{what}"
    if name not in Settings.model_fields:
        raise KeyError(f"no {kind} limit for {source} {what} (Settings has no {name})")
    return getattr(load_settings(), name)


def size_limit_variable(source: str, kind: str) -> str:
    return variables_of(f"max_mb_{source}_{kind}")[0]


def size_limit_bytes(source: str, kind: str) -> int:
    """The limit in bytes (CASEFORGE_MAX_MB_<SOURCE>_<KIND>)."""
    return int(round(_limit("mb", source, kind) * MB))


def _megabytes(size: int) -> str:
    return f"{size / MB:.1f} MB" if size >= MB / 10 else f"{size:,} bytes"


def size_limit_text(source: str, kind: str) -> str:
    """'the oyez case limit of 2.0 MB (set CASEFORGE_MAX_MB_OYEZ_CASE to raise it)'."""
    return (f"the {source} {kind} limit of {_megabytes(size_limit_bytes(source, kind))} "
            f"(set {size_limit_variable(source, kind)} to raise it)")


def size_problem(source: str, kind: str, size: int, action: str = "not parsed") -> str | None:
    """Why an input of `size` bytes is refused before parsing, or None when it is within the limit."""
    if size <= size_limit_bytes(source, kind):
        return None
    return f"{_megabytes(size)} is over {size_limit_text(source, kind)}; {action}"


def payload_origin(payload: Payload) -> str:
    """Where a payload came from, for a one-line problem: its archive key, plus the file name of a replayed file
    when the key does not already say it."""
    url = payload.url or ""
    if url.startswith("file:"):
        name = Path(unquote(urlparse(url).path)).name
        if name and name not in payload.key:
            return f"{payload.key} (file {name})"
    return payload.key


# ---- what one document may expand to once it is read: checked before and while it is parsed ----

# A DOCX part over this size is checked for its compression ratio (Settings.max_zip_ratio) before it is inflated.
ZIP_RATIO_FROM_BYTES = MB


class LimitExceeded(ValueError):
    """A document refused because reading it would go past one of these limits; the message names the limit
    and the setting that raises it."""


def element_limit(source: str, kind: str) -> int:
    return int(_limit("elements", source, kind))


def element_problem(source: str, kind: str, count: int) -> str | None:
    """Why a document of `count` markup elements is refused before parsing, or None."""
    limit = element_limit(source, kind)
    if count <= limit:
        return None
    return (f"{count:,} elements is over the {source} {kind} limit of {limit:,} "
            f"(set {variables_of(f'max_elements_{source}_{kind}')[0]} to raise it); not parsed")


def zip_ratio_limit() -> float:
    return load_settings().max_zip_ratio


class ParseBudget:
    """The parse-time budget of one document (CASEFORGE_MAX_PARSE_S_<SOURCE>_<KIND>), started when made and
    checked by the reader between the stages of its reading: a stage is not interrupted (the size and element
    limits bound each one), but a document that has taken too long is refused instead of going on."""

    def __init__(self, source: str, kind: str, clock=time.monotonic):
        self.source, self.kind, self.clock = source, kind, clock
        self.variable = variables_of(f"max_parse_s_{source}_{kind}")[0]
        self.seconds = _limit("parse_s", source, kind)
        self.started = clock()

    def check(self, stage: str) -> None:
        """LimitExceeded when the document has taken longer than its budget by the end of `stage`."""
        elapsed = self.clock() - self.started
        if self.seconds > 0 and elapsed > self.seconds:
            raise LimitExceeded(f"parsing took {elapsed:.1f} s by the end of {stage}, over the {self.source} "
                                f"{self.kind} parse-time budget of {self.seconds:g} s (set {self.variable} "
                                "to raise it)")
