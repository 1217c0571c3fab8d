"""Push a build's sample to Label Studio and pull the annotations back into the warehouse.

push: the benchmark's items (sql/review/<benchmark>_items.sql), a stratified sample of them (the items pushed
before and still in the build count towards the size), imported into caseforge's project of that benchmark as
tasks that carry what the judge saw and an opaque ref, never the judge's verdict nor the item id. A push stopped
midway is completed by the next one: tasks already in the project are recognised by their ref, not imported again.

pull: every task of the project with its annotations, read to the end before anything is written, then the
benchmark's annotations and refusals replaced as a whole in one transaction. So a pull twice adds nothing, an
edited annotation replaces its earlier version, a deleted one is gone, and a pull stopped midway (Label Studio gone
between two pages) writes nothing and the next one completes. An annotation is refused, with its reason, when its
completed_by is not its updated_by (one user's token crediting another), when its answer is outside the labelling
view, when its annotator already answered the item, or when the item already has its overlap of annotations.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from caseforge.review.labelstudio import LabelStudio
from caseforge.review.sample import Item, stratified_sample
from caseforge.review.views import View, view_of
from caseforge.warehouse.statements import run_sql, run_sql_over_rows


class NothingToReview(RuntimeError):
    """The benchmark has no item to push, or nothing was pushed yet to pull."""


def ref_of(benchmark: str, item_id: str) -> str:
    return hashlib.sha256(f"{benchmark}\x00{item_id}".encode()).hexdigest()[:16]


def build_items(con, benchmark: str) -> list[Item]:
    view_of(benchmark)
    rows = run_sql(con, f"review/{benchmark}_items.sql").fetchall()
    return [Item(str(item_id), str(label or ""), str(band or ""), int(year) if year is not None else None,
                 json.loads(judge), json.loads(data)) for item_id, label, band, year, judge, data in rows]


@dataclass
class PushResult:
    project_id: int
    sampled: int = 0           # items of the sample (kept from before and new)
    imported: int = 0          # tasks imported now
    found: int = 0             # tasks of the sample already in the project (an earlier, possibly stopped, push)

    def line(self, benchmark: str) -> str:
        return (f"{benchmark}: {self.sampled} items in review (project {self.project_id}): {self.imported} pushed now, "
                f"{self.found} already there")


def _project(con, client: LabelStudio, benchmark: str, view: View, overlap: int, create: bool) -> int | None:
    project = client.project(benchmark)
    if project is None:
        if not create:
            return None
        project = client.create_project(benchmark, view.label_config(), overlap)
    elif hashlib.sha256(str(project.get("label_config", "")).encode()).hexdigest() != view.sha():
        raise ValueError(f"Label Studio project {project['id']} ({project.get('title')}) has another labelling view "
                         f"than caseforge's {benchmark} view: its answers would not fit; rename or remove it")
    run_sql(con, "review/record_project.sql", {"benchmark": benchmark, "server": client.url,
                                               "project_id": int(project["id"]), "view_sha": view.sha(),
                                               "overlap": overlap})
    return int(project["id"])


def push(con, client: LabelStudio, benchmark: str, size: int, seed: int, overlap: int) -> PushResult:
    view = view_of(benchmark)
    items = build_items(con, benchmark)
    if not items:
        raise NothingToReview(f"{benchmark} has no item to review: build it first (`caseforge build {benchmark}`)")
    project_id = _project(con, client, benchmark, view, overlap, create=True)
    result = PushResult(project_id)
    current = {i.item_id: i for i in items}
    pushed = {row[0] for row in run_sql(con, "review/pushed_items.sql",
                                        {"benchmark": benchmark, "project_id": project_id}).fetchall()}
    kept = [current[i] for i in sorted(pushed) if i in current]
    fresh = [i for i in items if i.item_id not in pushed]
    sample = kept + stratified_sample(fresh, max(0, size - len(kept)), seed)
    result.sampled = len(sample)
    in_project = {t.get("data", {}).get("ref"): int(t["id"]) for t in client.tasks(project_id)}
    missing = [i for i in sample if ref_of(benchmark, i.item_id) not in in_project]
    result.found = len(sample) - len(missing)
    result.imported = client.import_tasks(project_id, [
        {"data": {"ref": ref_of(benchmark, i.item_id), **i.data}} for i in missing])
    if missing:
        in_project = {t.get("data", {}).get("ref"): int(t["id"]) for t in client.tasks(project_id)}
    rows = [{"benchmark": benchmark, "item_id": i.item_id, "ref": ref_of(benchmark, i.item_id),
             "project_id": project_id, "task_id": in_project[ref_of(benchmark, i.item_id)], "stratum": i.stratum,
             "judge": json.dumps(i.judge, sort_keys=True)} for i in sample if ref_of(benchmark, i.item_id) in in_project]
    lost = len(sample) - len(rows)
    if lost:
        raise RuntimeError(f"Label Studio project {project_id} lacks {lost} task(s) just imported")
    run_sql_over_rows(con, "review/record_items.sql", rows)
    return result


@dataclass
class PullResult:
    project_id: int
    tasks: int = 0
    accepted: int = 0          # annotations accepted (now in review.annotations)
    added: int = 0             # ... of which new since the last pull
    replaced: int = 0          # ... of which edited since the last pull (their earlier version replaced)
    removed: int = 0           # annotations of the last pull that are gone from Label Studio
    skipped: int = 0           # annotations cancelled (the annotator skipped the task): no answer
    refusals: list[dict] = field(default_factory=list)

    def line(self, benchmark: str) -> str:
        return (f"{benchmark}: {self.accepted} annotations of {self.tasks} tasks (project {self.project_id}): "
                f"{self.added} new, {self.replaced} edited, {self.removed} gone, {self.skipped} skipped, "
                f"{len(self.refusals)} refused")


def judge_annotations(view: View, benchmark: str, tasks: list[dict], items: dict[str, str], overlap: int):
    """(accepted rows, refusals) of the tasks' annotations; `items`: ref -> item id of the pushed items."""
    accepted, refused, skipped = [], [], 0
    for task in sorted(tasks, key=lambda t: int(t["id"])):
        item_id = items.get((task.get("data") or {}).get("ref"))
        annotators: list[int] = []
        for note in sorted(task.get("annotations") or [], key=lambda a: int(a["id"])):
            completed_by, updated_by = note.get("completed_by"), note.get("updated_by")
            if isinstance(completed_by, dict):
                completed_by = completed_by.get("id")
            base = {"benchmark": benchmark, "item_id": item_id, "task_id": int(task["id"]),
                    "annotation_id": int(note["id"]), "completed_by": completed_by, "updated_by": updated_by}
            if note.get("was_cancelled"):
                skipped += 1
                continue
            if item_id is None:
                reason = ("the task is not among the pushed items (another project's, or a push stopped midway: "
                          "`caseforge review push` records it)")
            elif completed_by is None or completed_by != updated_by:
                reason = (f"completed_by {completed_by} is not updated_by {updated_by}: one user's token credited "
                          "another user")
            else:
                answers, reason = view.answers(note.get("result") or [])
                if reason is None and completed_by in annotators:
                    reason = f"annotator {completed_by} already answered this item"
                elif reason is None and len(annotators) >= overlap:
                    reason = f"beyond the overlap: the item already has {overlap} annotations"
            if reason is not None:
                refused.append({**base, "reason": reason})
                continue
            annotators.append(completed_by)
            accepted += [{"benchmark": benchmark, "item_id": item_id, "task_id": int(task["id"]),
                          "annotation_id": int(note["id"]), "annotator": int(completed_by), "field": name,
                          "value": value, "updated_at": str(note.get("updated_at") or "")}
                         for name, value in sorted(answers.items())]
    return accepted, refused, skipped


def pull(con, client: LabelStudio, benchmark: str, overlap: int) -> PullResult:
    view = view_of(benchmark)
    project_id = _project(con, client, benchmark, view, overlap, create=False)
    if project_id is None:
        raise NothingToReview(f"no {benchmark} project on Label Studio at {client.url}: run `caseforge review push "
                              f"{benchmark}` first")
    items = {ref: item_id for item_id, ref, *_ in run_sql(con, "review/pushed_items.sql", {
        "benchmark": benchmark, "project_id": project_id}).fetchall()}
    tasks = list(client.tasks(project_id))             # every page before anything is written
    accepted, refused, skipped = judge_annotations(view, benchmark, tasks, items, overlap)
    before = {}
    for annotation_id, _item, _task, _annotator, name, value, _updated in run_sql(
            con, "review/annotations.sql", {"benchmark": benchmark}).fetchall():
        before.setdefault(annotation_id, {})[name] = value
    after = {}
    for row in accepted:
        after.setdefault(row["annotation_id"], {})[row["field"]] = row["value"]
    result = PullResult(project_id, len(tasks), len(after), sum(a not in before for a in after),
                        sum(a in before and before[a] != v for a, v in after.items()),
                        sum(a not in after for a in before), skipped, refused)
    con.execute("BEGIN TRANSACTION")
    try:
        run_sql(con, "review/clear_annotations.sql", {"benchmark": benchmark})
        run_sql(con, "review/clear_refusals.sql", {"benchmark": benchmark})
        run_sql_over_rows(con, "review/insert_annotations.sql", accepted)
        run_sql_over_rows(con, "review/insert_refusals.sql", refused)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return result
