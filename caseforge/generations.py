"""Generations on a store: the one way caseforge replaces what a store prefix holds while others read it, where
nothing can be renamed. The published mirror (caseforge.warehouse.published) and releases on a store
(caseforge.release.stored) both keep whole, immutable generations and a pointer:

    current.json        the pointer: which generation readers read, written last, in one PUT
    <the generations>   each kind lays its own out (the mirror: generations/NNNNNNNN.json listing content objects
                        it shares with other generations; a release: a folder v<version>/ of its own)

A writer uploads a generation's objects, then its manifest, then replaces the pointer; a reader resolves the
pointer once and reads only what that generation lists, so it sees one whole generation, the old or the new, also
when a write is killed midway. After the pointer moves, the generations not kept are pruned with the objects no
kept generation lists, never the pointer's generation nor the one it named before (a reader that read the old
pointer may still be reading it). A writer refuses a prefix that holds anything its layout would not put there
(pruning would delete it).

The pointer, for every kind:

    {"kind": "mirror" | "release", "generation": NAME, "manifest": OBJECT, "previous": NAME | null, ...}

`generation` names the generation the way its kind does ("00000007", "v2024.7.1-3f2a4b5c6d7e"), `manifest` is
the object listing what it holds, `previous` the generation the pointer named before; each kind adds its own
fields (the mirror: `written_at`, `source`; a release: `dataset`, `version`, `folder`, `manifest_sha256`).

Stores an earlier caseforge wrote stay readable: the mirror's pointer was CURRENT.json with whole numbers for
generations, a release's current.json had only its own four fields; read_pointer reads both (the kind's
`upgrade` says how). The next write of a new generation writes current.json and deletes CURRENT.json, so a
reader of an earlier caseforge then finds no pointer and says so, never reading a generation later pruned.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Iterable

from caseforge.store import PROBE_PREFIX, Store

POINTER = "current.json"
OLD_POINTERS = ("CURRENT.json",)        # the published mirror's pointer before issue 40
COMMON = ("kind", "generation", "manifest", "previous")


class NotAPointer(ValueError):
    """A pointer caseforge did not write, or one of another kind of store; the reason in one line."""


@dataclass(frozen=True)
class Pointer:
    kind: str
    generation: str
    manifest: str
    previous: str | None = None
    fields: dict = field(default_factory=dict)       # what the kind adds
    name: str = POINTER                              # the object it was read from

    def to_json(self) -> bytes:
        data = {"kind": self.kind, "generation": self.generation, "manifest": self.manifest,
                "previous": self.previous, **self.fields}
        return (json.dumps(data, indent=1) + "\n").encode()


def is_pointer_or_probe(name: str) -> bool:
    """The pointer (under its name or an older one), or a store check's probe a killed check left: objects of any
    store in this layout, never content."""
    return name == POINTER or name in OLD_POINTERS or name.startswith(PROBE_PREFIX)


def read_pointer(store: Store, kind: str, upgrade: Callable[[dict], dict] | None = None) -> Pointer | None:
    """The pointer at `store` (current.json, else an older name), None when there is none. `upgrade` turns a pointer
    an earlier caseforge wrote for this kind (no `kind` field) into the common fields. NotAPointer when the
    pointer is not caseforge's or is another kind's."""
    for name in (POINTER, *OLD_POINTERS):
        try:
            raw = store.get(name)
        except FileNotFoundError:
            continue
        try:
            data = json.loads(raw)
        except ValueError:
            raise NotAPointer(f"its {name} is not one caseforge wrote") from None
        return _parsed(data, name, kind, upgrade)
    return None


def _parsed(data, name: str, kind: str, upgrade) -> Pointer:
    if isinstance(data, dict) and "kind" not in data and upgrade is not None:
        try:
            data = upgrade(data)
        except (KeyError, TypeError, ValueError):
            raise NotAPointer(f"its {name} is not one caseforge wrote") from None
    if not isinstance(data, dict) or not set(COMMON) <= set(data) or not isinstance(data["generation"], str) \
            or not isinstance(data["manifest"], str) or not isinstance(data["previous"], (str, type(None))):
        raise NotAPointer(f"its {name} is not one caseforge wrote")
    if data["kind"] != kind:
        raise NotAPointer(f"its {name} points to a caseforge {data['kind']}, not a {kind}")
    return Pointer(kind, data["generation"], data["manifest"], data["previous"],
                   {k: v for k, v in data.items() if k not in COMMON}, name)


def write_pointer(store: Store, pointer: Pointer) -> None:
    """Point readers at `pointer.generation`: the last write of a generation, one PUT. A pointer under an older name
    is then removed (unless it is the same object: a folder store on a case-insensitive file system)."""
    store.put(POINTER, pointer.to_json())
    names = set(store.list())
    for old in OLD_POINTERS:
        if old in names and POINTER in names:
            store.delete(old)


def foreign(names: Iterable[str], owns: Callable[[str], bool]) -> list[str]:
    """The objects among `names` that this layout would not put there (sorted): a prefix holding any is not the
    writer's to prune."""
    return sorted(n for n in names if not is_pointer_or_probe(n) and not owns(n))


def prune(store: Store, names: Iterable[str], keep: set[str], generation_of: Callable[[str], str | None],
          listed: set[str] = frozenset(), shared: Callable[[str], bool] = lambda name: False) -> list[str]:
    """Delete every object of a generation not in `keep` (`generation_of` says whose an object is) and every shared
    content object (`shared`) no kept generation lists (`listed`): unfinished writes' objects included, never a
    pointer. The deleted names, in order."""
    gone = []
    for name in sorted(names):
        if is_pointer_or_probe(name):
            continue
        generation = generation_of(name)
        if (generation is not None and generation not in keep) or \
                (generation is None and shared(name) and name not in listed):
            gone.append(name)
    for name in gone:
        store.delete(name)
    return gone
