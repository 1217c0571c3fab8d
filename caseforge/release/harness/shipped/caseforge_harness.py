"""What the harness tasks of a caseforge release share: the release check and the samples. Needs only Python's
standard library and pyarrow; caseforge is not imported: it wrote this file into the release (harness/), with the
prompts its own templates rendered (harness/samples.parquet) and what it knows of the release (harness/pin.json).
The scoring rules are beside it, in caseforge_scoring.py.

Every task calls `open_release` before anything is scored: release.json must carry the version the tasks were
written for, and every file listed in MANIFEST.sha256 must still have its sha256 (a changed file stops the run with
one line). `load_samples` joins harness/samples.parquet with the release's own data/<split>.parquet: the id, the
source-document date (`after` keeps the items decided after a day), the target, and the text of the sample's fields
put into its prompt where the prompt holds a «field» mark.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import urllib.request
from dataclasses import dataclass
from pathlib import Path

PIN = "harness/pin.json"
SAMPLES = "harness/samples.parquet"
MANIFEST = "MANIFEST.sha256"
METADATA = "release.json"
CANDIDATE = "candidate"          # the field of a judge's prompt that holds the draft it judges
_MARK = re.compile(r"\x00([a-z_]+)\x00")


class ReleaseRefused(SystemExit):
    """The release cannot be scored (changed, not the one the tasks were written for, a bad option): the harness
    stops with one line."""

    def __init__(self, message: str):
        super().__init__(f"caseforge release refused: {message}")


# ---------------------------------------------------------------- the release and its samples


@dataclass(frozen=True)
class Release:
    root: Path
    pin: dict

    @property
    def dataset(self) -> str:
        return self.pin["dataset"]

    def variant(self, name: str) -> dict:
        if name not in self.pin["variants"]:
            raise ReleaseRefused(f"{self.dataset} has no variant {name!r} (it has {', '.join(self.pin['variants'])})")
        return self.pin["variants"][name]


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def open_release(harness_dir: str | Path) -> Release:
    """The release whose harness/ folder is `harness_dir`, after checking its version and every file's sha256."""
    root = Path(harness_dir).resolve().parent
    try:
        pin = json.loads((root / PIN).read_text(encoding="utf-8"))
        metadata = json.loads((root / METADATA).read_text(encoding="utf-8"))
        lines = (root / MANIFEST).read_text(encoding="utf-8").splitlines()
    except (OSError, ValueError) as exc:
        raise ReleaseRefused(f"{root} is not a whole caseforge release ({exc})") from None
    name = f"{pin.get('dataset')} {pin.get('version')}"
    if metadata.get("version") != pin.get("version") or metadata.get("dataset") != pin.get("dataset"):
        raise ReleaseRefused(f"{root}: {METADATA} is {metadata.get('dataset')} {metadata.get('version')}, the harness "
                             f"tasks were written for {name}")
    listed = {}
    for line in lines:
        sha, _, rel = line.partition("  ")
        listed[rel] = sha
    expected = {**listed, **pin["sha256"]}
    changed = [rel for rel, sha in sorted(expected.items())
               if not (root / rel).is_file() or _sha256(root / rel) != sha or listed.get(rel, sha) != sha]
    if changed:
        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        raise ReleaseRefused(f"{name}: {changed[0]}{more} changed after export (sha256 differs from {MANIFEST}); "
                             "score only the release as it was written")
    return Release(root, pin)


def _day(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()[:10]
    return str(value)[:10]


def check_day(after: str | None) -> str | None:
    if after is None or after == "":
        return None
    try:
        return dt.date.fromisoformat(str(after)).isoformat()
    except ValueError:
        raise ReleaseRefused(f"after must be a day written YYYY-MM-DD, not {after!r}") from None


def fill(text: str, values: dict) -> str:
    """A prompt with its «field» marks replaced by the values (caseforge rendered it with the marks in place); a
    mark without a value stays for later (a judge's «candidate»)."""
    return _MARK.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), text)


def messages_for(template: list[dict], values: dict) -> list[dict]:
    """Chat messages from a rendered template: each message filled, then stripped as caseforge strips a block."""
    return [{"role": m["role"], "content": fill(m["content"], values).strip()} for m in template]


def load_samples(release: Release, variant: str, split: str | None = None, after: str | None = None,
                 only: dict | None = None) -> list[dict]:
    """The samples of `variant` (of `split`, default the pin's; "all" for every split), in id order, of the items
    decided after `after` (YYYY-MM-DD) when given; `only` keeps the samples whose extra fields equal its values.
    Each: id, split, date, target, messages, extra, judge (the judge's prompt or None)."""
    import pyarrow.parquet as pq

    release.variant(variant)
    after = check_day(after)
    pin = release.pin
    split = split or pin["default_split"]
    splits = pin["splits"] if split == "all" else [split]
    if any(s not in pin["splits"] for s in splits):
        raise ReleaseRefused(f"{release.dataset} has no split {split!r} (it has {', '.join(pin['splits'])}, all)")
    rows = [r for r in pq.read_table(release.root / SAMPLES).to_pylist()
            if r["variant"] == variant and r["split"] in splits]
    data = {}
    for name in splits:
        for row in pq.read_table(release.root / "data" / f"{name}.parquet").to_pylist():
            data[(name, str(row[pin["id_column"]]))] = row
    samples = []
    for row in rows:
        item = data[(row["split"], row["id"])]
        day = _day(item[pin["date_column"]])
        if after is not None and (day is None or day <= after):
            continue
        extra = json.loads(row["extra"])
        if only and any(extra.get(k) != v for k, v in only.items()):
            continue
        judge = [{"role": m["role"], "content": fill(m["content"], item)} for m in json.loads(row["judge"])] \
            if row["judge"] else None
        samples.append({"id": row["id"], "split": row["split"], "date": day, "target": item[pin["target_column"]],
                        "messages": messages_for(json.loads(row["messages"]), item), "extra": extra, "judge": judge})
    if not samples:
        newest = max((_day(r[pin["date_column"]]) or "" for r in data.values()), default="")
        raise ReleaseRefused(f"{release.dataset}: no {variant} sample in {split}" +
                             (f" was decided after {after} (the newest is from {newest})" if after else ""))
    return sorted(samples, key=lambda s: (s["split"], s["id"]))


def judge_messages(sample: dict, candidate: str) -> list[dict]:
    return messages_for(sample["judge"], {CANDIDATE: candidate})


def chat(base_url: str, model: str, messages: list[dict], max_tokens: int, api_key: str | None = None,
         timeout_s: float = 600.0) -> tuple[str | None, str | None]:
    """One chat completion from an OpenAI-compatible server at temperature 0: (text, finish reason)."""
    body = json.dumps({"model": model, "messages": messages, "temperature": 0.0, "max_tokens": max_tokens}).encode()
    headers = {"content-type": "application/json", **({"authorization": f"Bearer {api_key}"} if api_key else {})}
    request = urllib.request.Request(base_url.rstrip("/") + "/chat/completions", body, headers)
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        choice = json.loads(response.read())["choices"][0]
    return choice["message"].get("content"), choice.get("finish_reason")
