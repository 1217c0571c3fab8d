"""`replay`: answers from a recorded file of request identity → response.

The file is JSONL, one object per line:
    {"identity", "model", "step", "template", "key", "request", "response", "served_model"}
where `request` is the whole canonical request (LLMRequest.canonical: model, messages, sampling
parameters, output schema, template id and hash) whose sha256 is `identity`. A request the file has
no answer for is refused with ReplayMiss, which names the nearest recorded request and what differs
from it (a field, or the first differing lines of a message): a replay never invents output, and a
miss explains itself. Files recorded before requests were stored (no `request` key) still replay. `served_model` is
the model that served the recorded answer, as the cache recorded it (absent or null: not recorded); a replayed
answer is recorded as served by it.
"""
from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path

import duckdb

from caseforge.llm.types import Completion, LLMRequest, identity_of
from caseforge.outputs import replacing_file
from caseforge.warehouse.statements import sql_text

MAX_SHOWN = 160          # characters of a differing line shown in a miss
MAX_LINES = 3            # differing line blocks shown per message


class ReplayMiss(RuntimeError):
    pass


@dataclass(frozen=True)
class ReplayRecord:
    identity: str
    response: str
    key: str | None = None
    template: str | None = None
    request: dict | None = None
    served_model: str | None = None


def load_replay_file(path: Path) -> dict[str, ReplayRecord]:
    if not path.exists():
        raise FileNotFoundError(f"replay file not found: {path}")
    records = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            record = ReplayRecord(raw["identity"], raw["response"], raw.get("key"), raw.get("template"),
                                  raw.get("request"), raw.get("served_model"))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: not a replay record ({exc})") from exc
        if record.request is not None and identity_of(record.request) != record.identity:
            raise ValueError(f"{path}:{number}: the stored request does not hash to its identity "
                             f"(edited by hand?); re-record the file")
        records[record.identity] = record
    return records


class ReplayBackend:
    name = "replay"
    batch_size = 1000
    max_attempts = 1   # a recorded answer does not change when asked again

    def __init__(self, model: str, replay_file: str | Path | None = None, **_ignored):
        if replay_file is None:
            raise ValueError("the replay backend needs a replay file (--replay-file or CASEFORGE_REPLAY_FILE)")
        self.model = model
        self.path = Path(replay_file)
        self.records = load_replay_file(self.path)

    def complete_batch(self, requests: list[LLMRequest]) -> list[Completion]:
        missing = [r for r in requests if r.identity(self.model) not in self.records]
        if missing:
            first = missing[0]
            raise ReplayMiss(
                f"replay file {self.path} has no answer for {len(missing)} request(s); first: key={first.key} "
                f"template={first.template_id} identity={first.identity(self.model)}; "
                f"{explain_miss(first, self.model, list(self.records.values()))}")
        found = [self.records[r.identity(self.model)] for r in requests]
        return [Completion(text=record.response, latency_s=0.0, served_model=record.served_model) for record in found]


def explain_miss(request: LLMRequest, model: str, records: list[ReplayRecord]) -> str:
    """What differs between `request` and the nearest recorded request, in one line."""
    with_requests = [r for r in records if r.request is not None]
    if not with_requests:
        return "the file stores no requests to compare with (recorded by an older caseforge): re-record it"
    wanted = request.canonical(model)
    same_template = [r for r in with_requests if r.template == request.template_id] or with_requests
    same_key = [r for r in same_template if r.key == request.key] or same_template
    nearest = min(same_key, key=lambda r: (len(differences(wanted, r.request)), -_similarity(wanted, r.request)))
    found = differences(wanted, nearest.request)
    return f"nearest recorded request: key={nearest.key} template={nearest.template}; differs in " + "; ".join(found)


def _messages_text(canonical: dict) -> str:
    return "\n".join(m.get("content", "") for m in canonical.get("messages", []))


def _similarity(a: dict, b: dict) -> float:
    return difflib.SequenceMatcher(None, _messages_text(a).splitlines(), _messages_text(b).splitlines(),
                                   autojunk=False).ratio()


def _short(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "…"


def differences(wanted: dict, recorded: dict) -> list[str]:
    """Readable differences between two canonical requests: fields first, then message lines."""
    found = []
    for field in ("model", "template", "params"):
        if wanted.get(field) != recorded.get(field):
            found.append(f"{field}: wanted {wanted.get(field)!r}, recorded {recorded.get(field)!r}")
    if wanted.get("schema") != recorded.get("schema"):
        found.append("output schema")
    want_msgs, have_msgs = wanted.get("messages", []), recorded.get("messages", [])
    if len(want_msgs) != len(have_msgs):
        found.append(f"number of messages: wanted {len(want_msgs)}, recorded {len(have_msgs)}")
    for number, (want, have) in enumerate(zip(want_msgs, have_msgs), start=1):
        if want.get("role") != have.get("role"):
            found.append(f"message {number} role: wanted {want.get('role')!r}, recorded {have.get('role')!r}")
        want_lines = want.get("content", "").splitlines()
        have_lines = have.get("content", "").splitlines()
        blocks = [op for op in difflib.SequenceMatcher(None, want_lines, have_lines, autojunk=False).get_opcodes()
                  if op[0] != "equal"]
        for tag, i1, i2, j1, j2 in blocks[:MAX_LINES]:
            wanted_text = " | ".join(want_lines[i1:i2]) or "(nothing)"
            recorded_text = " | ".join(have_lines[j1:j2]) or "(nothing)"
            found.append(f"message {number} ({want.get('role')}) line {i1 + 1}: wanted {_short(wanted_text)!r}, "
                         f"recorded {_short(recorded_text)!r}")
        if len(blocks) > MAX_LINES:
            found.append(f"message {number}: {len(blocks) - MAX_LINES} more differing block(s)")
    return found or ["nothing visible (same canonical request: the identity function changed?)"]


def not_a_replay_file(path: Path) -> str | None:
    """Why `path` is not a replay file export_replay wrote (None: it is one): its first record has no
    identity and response."""
    try:
        with path.open(encoding="utf-8") as handle:
            first = next((line for line in handle if line.strip()), "")
        record = json.loads(first)
    except (OSError, UnicodeDecodeError, ValueError):
        return f"{path.name} is not a caseforge replay file (its first line is not a JSON record)"
    if not isinstance(record, dict) or not {"identity", "response"} <= set(record):
        return f"{path.name} is not a caseforge replay file (no identity and response in its first record)"
    return None


def export_replay(con: duckdb.DuckDBPyConnection, path: Path, step: str | None = None) -> int:
    """Write the cached final answer of every call (of one step, or all) as a replay file, each with
    its whole request; nothing is written when there is none."""
    rows = con.execute(sql_text("llm/replay_rows.sql"), {"step": step}).fetchall()
    if not rows:
        return 0
    # written whole or not at all, and only over a replay file (caseforge.outputs)
    with replacing_file(path, not_a_replay_file, "the replay file") as out:
        for identity, model, call_step, template_id, request_json, response, served_model in rows:
            request = LLMRequest.model_validate_json(request_json)
            canonical = request.canonical(model)
            if identity_of(canonical) != identity:
                raise ValueError(f"ops.llm_calls row {identity[:16]}… ({call_step}): its stored request does not "
                                 f"hash to its identity; the cache was written by another identity function")
            out.write(json.dumps({"identity": identity, "model": model, "step": call_step, "template": template_id,
                                  "key": request.key, "request": canonical, "response": response,
                                  "served_model": served_model},
                                 ensure_ascii=False, sort_keys=True) + "\n")
    return len(rows)
