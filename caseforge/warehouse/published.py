"""The Parquet mirror published to a store ([mirror] publish: s3://…, gs://…, file://…, a folder), and found
there again by a reader on any machine (`caseforge sql --mirror URL`).

Under the store's prefix:

    CURRENT.json                    the pointer: which generation readers read; written last, in one PUT
    generations/NNNNNNNN.json       one generation: every table's objects (as MIRROR.json lists its files)
    data/<table>/<digest>.parquet   each file once, named by what it holds (its table, columns, rows' content
                                    fingerprint and size, from the local mirror's manifest)

A publish uploads the files whose names are not in the store yet (so only what changed: a table the local
mirror kept as a hard link has the same fingerprint, so the same name), then the generation's manifest, then
the pointer. A reader resolves the pointer once and reads only the objects that generation lists, so it sees
one whole generation, the old or the new, also when a publish is killed midway; the next publish finds the
objects the killed one uploaded and does not upload them again. Generations beyond `keep` are then pruned
(never the one the pointer names, nor the one it named before, which a reader may still be reading) with the
objects no kept generation lists.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from caseforge.store import Store, StoreError, explain
from caseforge.warehouse.mirror import MIRROR_MANIFEST
from caseforge.warehouse.statements import IDENTIFIER

POINTER = "CURRENT.json"
GENERATIONS = "generations/"
DATA = "data/"
MIN_KEEP = 2            # the pointer's generation and the one before it
OWN_OBJECT = re.compile(r"^(generations/\d{8}\.json|data/(curated|ops)/[a-z_][a-z0-9_]*/[0-9a-f]{32}\.parquet)$")


@dataclass
class PublishReport:
    generation: int | None          # the generation the pointer names now
    uploaded: list[str] = field(default_factory=list)     # data objects written by this publish
    reused: int = 0                 # data objects already in the store
    pruned: list[str] = field(default_factory=list)       # objects deleted (old generations and their files)
    unchanged: bool = False         # the store already had this very generation of the mirror


@dataclass(frozen=True)
class PublishedMirror:
    """One generation of a published mirror: the objects of each table, named in the store."""

    store: Store
    generation: int
    written_at: datetime
    files: dict[str, tuple[str, ...]]       # schema.table -> its objects, as paths in the store's filesystem

    @property
    def folder(self) -> str:
        return self.store.url

    def age(self, now: datetime | None = None) -> str:
        seconds = max(0, int(((now or datetime.now(timezone.utc)) - self.written_at).total_seconds()))
        return f"{seconds} s" if seconds < 120 else f"{seconds // 60} min" if seconds < 7200 else \
            f"{seconds // 3600} h" if seconds < 172800 else f"{seconds // 86400} days"

    def note(self) -> str:
        return (f"note: answering from the mirror published at {self.store.describe()}, generation "
                f"{self.generation}, written {self.written_at:%Y-%m-%d %H:%M:%S} UTC ({self.age()} ago)")


def _object_name(table: str, columns: str, part: dict, size: int) -> str:
    schema, _, name = table.partition(".")
    what = json.dumps([table, columns, int(part.get("rows", 0)), str(part.get("hash")), size])
    digest = hashlib.sha256(what.encode()).hexdigest()[:32]
    return f"{DATA}{schema}/{name}/{digest}.parquet"


def _generation_name(number: int) -> str:
    return f"{GENERATIONS}{number:08d}.json"


def read_pointer(store: Store) -> dict | None:
    """The pointer the store holds, or None when nothing was published there yet."""
    try:
        return json.loads(store.get(POINTER))
    except FileNotFoundError:
        return None


def publish_mirror(parquet_dir: Path, store: Store, keep: int = 3, check_timeout_s: float = 45.0) -> PublishReport:
    """Publish the local mirror's current generation (the one `parquet_dir` links to) to `store`: see the
    module docstring. StoreError, in one line naming the store, when the store cannot be used."""
    folder = Path(parquet_dir).resolve()
    try:
        local = json.loads((folder / MIRROR_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(f"store {store.describe()}: nothing to publish: no readable {MIRROR_MANIFEST} in the "
                         f"Parquet mirror at {parquet_dir} ({exc})") from exc
    if not isinstance(local.get("tables"), dict):
        raise StoreError(f"store {store.describe()}: the mirror at {parquet_dir} predates generations: "
                         "run once so it is written again, then publish")
    source = {"database": local.get("database"), "generation": local.get("generation"),
              "written_at": local.get("written_at")}
    store.check(timeout_s=check_timeout_s, write=False)      # bounded: a dead endpoint fails here, in one line
    try:
        return _publish(folder, local, source, store, max(MIN_KEEP, int(keep)))
    except StoreError:
        raise
    except Exception as exc:    # noqa: BLE001 - every store failure as one line naming the store
        raise explain(store, exc) from exc


def _publish(folder: Path, local: dict, source: dict, store: Store, keep: int) -> PublishReport:
    pointer = read_pointer(store)
    if pointer is not None and pointer.get("source") == source:
        return PublishReport(pointer["generation"], unchanged=True)
    present = set(store.list())
    foreign = sorted(n for n in present if n != POINTER and not OWN_OBJECT.match(n))
    if foreign:
        raise StoreError(f"store {store.describe()}: holds {len(foreign)} object(s) that are not part of a "
                         f"published caseforge mirror (first: {foreign[0]}), which a publish could prune: give "
                         "the mirror a prefix of its own")
    report = PublishReport(None)
    tables = {}
    for table, entry in sorted(local["tables"].items()):
        if not IDENTIFIER.match(table):
            continue
        parts = []
        for part in entry.get("parts", []):
            path = folder / part["file"]
            size = path.stat().st_size
            name = _object_name(table, str(entry.get("columns")), part, size)
            if name in present:
                report.reused += 1
            else:
                store.put_file(name, path)
                present.add(name)
                report.uploaded.append(name)
            parts.append({"object": name, "rows": int(part.get("rows", 0)), "bytes": size})
        tables[table] = {"columns": entry.get("columns"), "parts": parts}
    numbers = [int(n[len(GENERATIONS):-5]) for n in present
               if n.startswith(GENERATIONS) and n.endswith(".json") and n[len(GENERATIONS):-5].isdigit()]
    number = 1 + max([*numbers, int(pointer["generation"]) if pointer else 0])
    written_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    previous = int(pointer["generation"]) if pointer else None
    manifest = {"generation": number, "written_at": written_at, "source": source, "previous": previous,
                "tables": tables}
    store.put(_generation_name(number), (json.dumps(manifest, indent=1) + "\n").encode())
    store.put(POINTER, (json.dumps({"generation": number, "manifest": _generation_name(number),
                                    "written_at": written_at, "previous": previous, "source": source},
                                   indent=1) + "\n").encode())
    report.generation = number
    report.pruned = _prune(store, number, previous, keep, present | {_generation_name(number)})
    return report


def _prune(store: Store, current: int, previous: int | None, keep: int, present: set[str]) -> list[str]:
    """Delete generations beyond the newest `keep` (never `current` nor `previous`) and every data object no
    kept generation lists (among them what a publish killed midway uploaded and no generation took up)."""
    numbers = sorted((int(n[len(GENERATIONS):-5]) for n in present
                      if n.startswith(GENERATIONS) and n[len(GENERATIONS):-5].isdigit()), reverse=True)
    kept = {n for n in numbers if n <= current}
    kept = set(sorted(kept, reverse=True)[:keep]) | {current} | ({previous} if previous else set())
    listed: set[str] = set()
    for number in kept:
        try:
            manifest = json.loads(store.get(_generation_name(number)))
        except FileNotFoundError:
            continue
        listed |= {part["object"] for entry in manifest.get("tables", {}).values() for part in entry.get("parts", [])}
    gone = [_generation_name(n) for n in numbers if n not in kept]
    gone += sorted(n for n in present if n.startswith(DATA) and n not in listed)
    for name in gone:
        store.delete(name)
    return gone


def find_published(store: Store, check_timeout_s: float = 45.0) -> PublishedMirror:
    """The generation the store's pointer names, resolved once: only the objects it lists are read.
    StoreError in one line naming the store when there is none or the store cannot be read."""
    store.check(timeout_s=check_timeout_s, write=False)
    try:
        pointer = read_pointer(store)
        if pointer is None:
            raise StoreError(f"store {store.describe()}: no published mirror there (no {POINTER}): check the URL, "
                             "or publish one ([mirror] publish in the settings, then a run)")
        manifest = json.loads(store.get(str(pointer["manifest"])))
    except StoreError:
        raise
    except FileNotFoundError as exc:
        raise StoreError(f"store {store.describe()}: generation {pointer.get('generation')} that {POINTER} names "
                         "is gone (pruned by newer publishes meanwhile): ask again") from exc
    except Exception as exc:    # noqa: BLE001 - one line naming the store
        raise explain(store, exc) from exc
    files = {}
    for table, entry in manifest.get("tables", {}).items():
        schema = table.partition(".")[0]
        objects = [part["object"] for part in entry.get("parts", [])]
        if IDENTIFIER.match(table) and schema in ("curated", "ops") and objects and \
                all(isinstance(o, str) and o.startswith(DATA) for o in objects):
            files[table] = tuple(store.path(o) for o in objects)
    return PublishedMirror(store, int(manifest["generation"]), datetime.fromisoformat(manifest["written_at"]), files)
