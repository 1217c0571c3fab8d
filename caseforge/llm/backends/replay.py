"""`replay`: answers from a recorded file of request identity → response.

The file is JSONL, one object per line: {"identity": ..., "model": ..., "response": ...} (extra
keys such as "key" or "step" are kept for readers and ignored here). A request the file has no
answer for is refused with ReplayMiss: a replay never invents output.
"""
from __future__ import annotations

import json
from pathlib import Path

import duckdb

from caseforge.llm.types import Completion, LLMRequest


class ReplayMiss(RuntimeError):
    pass


def load_replay_file(path: Path) -> dict[str, str]:
    if not path.exists():
        raise FileNotFoundError(f"replay file not found: {path}")
    answers = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            answers[record["identity"]] = record["response"]
        except (json.JSONDecodeError, KeyError) as exc:
            raise ValueError(f"{path}:{number}: not a replay record ({exc})") from exc
    return answers


class ReplayBackend:
    name = "replay"
    batch_size = 1000
    max_attempts = 1   # a recorded answer does not change when asked again

    def __init__(self, model: str, replay_file: str | Path | None = None, **_ignored):
        if replay_file is None:
            raise ValueError("the replay backend needs a replay file (--replay-file or CASEFORGE_REPLAY_FILE)")
        self.model = model
        self.path = Path(replay_file)
        self.answers = load_replay_file(self.path)

    def complete_batch(self, requests: list[LLMRequest]) -> list[Completion]:
        missing = [r for r in requests if r.identity(self.model) not in self.answers]
        if missing:
            first = missing[0]
            raise ReplayMiss(
                f"replay file {self.path} has no answer for {len(missing)} request(s); first: key={first.key} "
                f"template={first.template_id} identity={first.identity(self.model)}"
            )
        return [Completion(text=self.answers[r.identity(self.model)], latency_s=0.0) for r in requests]


def export_replay(con: duckdb.DuckDBPyConnection, path: Path, step: str | None = None) -> int:
    """Write the cached final answer of every call (of one step, or all) as a replay file."""
    rows = con.execute(
        "SELECT identity, model, step, template_id, response_text FROM ops.llm_calls "
        "WHERE response_text IS NOT NULL AND (? IS NULL OR step = ?) ORDER BY step, identity",
        [step, step],
    ).fetchall()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for identity, model, call_step, template_id, response in rows:
            out.write(json.dumps({"identity": identity, "model": model, "step": call_step,
                                  "template": template_id, "response": response}, ensure_ascii=False) + "\n")
    return len(rows)
