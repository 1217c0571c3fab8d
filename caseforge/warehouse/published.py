"""The Parquet mirror published to a store ([mirror] publish: s3://…, gs://…, file://…, a folder), and found
there again by a reader on any machine (`caseforge sql --mirror URL`).

Under the store's prefix, generations the way caseforge.generations keeps them:

    current.json                    the pointer (kind "mirror"): which generation readers read; written last
    generations/NNNNNNNN.json       one generation: every table's objects (as MIRROR.json lists its files)
    data/<table>/<digest>.parquet   each file once, named by what it holds (its table, columns, rows' content
                                    fingerprint and size, from the local mirror's manifest), shared by every
                                    generation that lists it

A publish uploads the files whose names are not in the store yet (so only what changed: a table the local
mirror kept as a hard link has the same fingerprint, so the same name), then the generation's manifest, then
the pointer. A reader resolves the pointer once and reads only the objects that generation lists, so it sees
one whole generation, the old or the new, also when a publish is killed midway; the next publish finds the
objects the killed one uploaded and does not upload them again. Generations beyond `keep` are then pruned
(never the one the pointer names, nor the one it named before, which a reader may still be reading) with the
objects no kept generation lists. A mirror an earlier caseforge published (its pointer CURRENT.json, whole
numbers for generations) is read as it is; the next publish that changes it writes current.json and deletes
CURRENT.json.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from caseforge import generations
from caseforge.generations import POINTER, NotAPointer, Pointer
from caseforge.store import Store, StoreError, explain
from caseforge.warehouse.mirror import MIRROR_MANIFEST
from caseforge.warehouse.statements import IDENTIFIER

KIND = "mirror"
GENERATIONS = "generations/"
DATA = "data/"
MIN_KEEP = 2            # the pointer's generation and the one before it
OWN_OBJECT = re.compile(r"^(generations/\d{8}\.json|data/(curated|ops)/[a-z_][a-z0-9_]*/[0-9a-f]{32}\.parquet)$")
GENERATION_NAME = re.compile(r"^generations/(\d{8})\.json$")


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


def _generation_of(name: str) -> str | None:
    """The generation whose manifest `name` is ("00000007"); None for a data object (shared by generations)."""
    found = GENERATION_NAME.match(name)
    return found.group(1) if found else None


def _upgrade(old: dict) -> dict:
    """The pointer an earlier caseforge wrote (CURRENT.json: generations as whole numbers) in today's fields."""
    return {**old, "kind": KIND, "generation": f"{int(old['generation']):08d}", "manifest": str(old["manifest"]),
            "previous": None if old.get("previous") is None else f"{int(old['previous']):08d}"}


def read_pointer(store: Store) -> Pointer | None:
    """The pointer the store holds, or None when nothing was published there yet. StoreError when it is not a
    published mirror's pointer."""
    try:
        return generations.read_pointer(store, KIND, _upgrade)
    except NotAPointer as exc:
        raise StoreError(f"store {store.describe()}: not a published caseforge mirror: {exc}") from None


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
    if pointer is not None and pointer.fields.get("source") == source:
        return PublishReport(int(pointer.generation), unchanged=True)
    present = set(store.list())
    foreign = generations.foreign(present, lambda name: OWN_OBJECT.match(name) is not None)
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
    numbers = [int(g) for g in map(_generation_of, present) if g is not None]
    number = 1 + max([*numbers, int(pointer.generation) if pointer else 0])
    written_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    previous = int(pointer.generation) if pointer else None
    manifest = {"generation": number, "written_at": written_at, "source": source, "previous": previous,
                "tables": tables}
    store.put(_generation_name(number), (json.dumps(manifest, indent=1) + "\n").encode())
    generations.write_pointer(store, Pointer(KIND, f"{number:08d}", _generation_name(number),
                                             pointer.generation if pointer else None,
                                             {"written_at": written_at, "source": source}))
    report.generation = number
    report.pruned = _prune(store, number, previous, keep, present | {_generation_name(number)})
    return report


def _prune(store: Store, current: int, previous: int | None, keep: int, present: set[str]) -> list[str]:
    """Delete generations beyond the newest `keep` (never `current` nor `previous`) and every data object no
    kept generation lists (among them what a publish killed midway uploaded and no generation took up)."""
    numbers = sorted((int(g) for g in map(_generation_of, present) if g is not None), reverse=True)
    kept = {n for n in numbers if n <= current}
    kept = set(sorted(kept, reverse=True)[:keep]) | {current} | ({previous} if previous else set())
    listed: set[str] = set()
    for number in kept:
        try:
            manifest = json.loads(store.get(_generation_name(number)))
        except FileNotFoundError:
            continue
        listed |= {part["object"] for entry in manifest.get("tables", {}).values() for part in entry.get("parts", [])}
    return generations.prune(store, present, {f"{n:08d}" for n in kept}, _generation_of, listed,
                             shared=lambda name: name.startswith(DATA))


def find_published(store: Store, check_timeout_s: float = 45.0) -> PublishedMirror:
    """The generation the store's pointer names, resolved once: only the objects it lists are read.
    StoreError in one line naming the store when there is none or the store cannot be read."""
    store.check(timeout_s=check_timeout_s, write=False)
    try:
        pointer = read_pointer(store)
        if pointer is None:
            raise StoreError(f"store {store.describe()}: no published mirror there (no {POINTER}): check the URL, "
                             "or publish one ([mirror] publish in the settings, then a run)")
        manifest = json.loads(store.get(pointer.manifest))
    except StoreError:
        raise
    except FileNotFoundError as exc:
        raise StoreError(f"store {store.describe()}: generation {int(pointer.generation)} that {pointer.name} "
                         "names is gone (pruned by newer publishes meanwhile): ask again") from exc
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
