"""`caseforge run nightly --plan`: what the next nightly would run, and why, read without running anything.

It builds tonight's plan as the nightly does (caseforge.flows.nightly_plan) and reads the warehouse through a
read-only connection (no run record, no Prefect, nothing written), then decides each stage as the runner's gate
would: a gated stage runs when the fingerprint of its inputs (and of what else decides it: models, prompts,
options) differs from the one recorded at its last success in ops.input_fingerprints, or when a stage before it
will change one of its inputs. A source replaying files (--from-samples) changes its tables when its files differ
from those it replayed at its last success; a live source fetches upstream, which nothing here can see, so the
stages reading its tables `maybe` run.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from caseforge.fingerprints import inputs_fingerprint, value_fingerprint
from caseforge.flows.nightly_plan import (NOT_REBUILT, NightlyOptions, Plan, Stage, build_plan, files_fingerprint,
                                          registry_stages, samples_folder)
from caseforge.settings import Settings
from caseforge.warehouse.connection import connect
from caseforge.warehouse.statements import run_sql, table_exists

RUN, MAYBE, SKIP = "run", "maybe", "skip"
COLUMNS = ["stage", "name", "would", "why"]
NAMES_SHOWN = 3                 # files or tables named in a reason before "and N more"


@dataclass
class Foreseen:
    kind: str
    name: str
    would: str                  # run | maybe | skip
    why: str

    @property
    def key(self) -> str:
        return f"{self.kind} {self.name}"


def would_rebuild(foreseen: list[Foreseen]) -> list[str]:
    """The builders, evaluations and releases certain to run (what NightlyResult.rebuilt() lists after the run)."""
    return [f.key for f in foreseen if f.would == RUN and f.kind not in NOT_REBUILT]


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    return shown + (f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else "")


class _Warehouse:
    """The read-only view the forecast needs (an absent warehouse: no tables, nothing recorded)."""

    def __init__(self, db_path: Path):
        self.con = connect(db_path, read_only=True) if Path(db_path).exists() else None
        self.recorded = self.con is not None and table_exists(self.con, "ops.input_fingerprints")

    def has(self, table: str) -> bool:
        return self.con is not None and table_exists(self.con, table)

    def last_success(self, stage: Stage) -> tuple[str, dict, int] | None:
        if not self.recorded:
            return None
        row = run_sql(self.con, "ops/last_success.sql", [stage.kind, stage.name]).fetchone()
        return (row[0], json.loads(row[1]), row[2]) if row else None

    def close(self) -> None:
        if self.con is not None:
            self.con.close()


def forecast(settings: Settings, options: NightlyOptions | None = None, sources=None, builders=None,
             evaluations=None, releases=None) -> list[Foreseen]:
    """Each stage of the next nightly with these options: run, maybe or skip, and why."""
    options = options or NightlyOptions()
    entries = registry_stages(builders, evaluations, sources, releases)
    plan = build_plan(settings, options, **entries, release_dir=options.release_dir or settings.release_dir)
    samples_dir = samples_folder(settings, options)
    warehouse = _Warehouse(settings.db_path)
    try:
        return _Forecaster(plan, warehouse, options, samples_dir).all()
    finally:
        warehouse.close()


class _Forecaster:
    def __init__(self, plan: Plan, warehouse: _Warehouse, options: NightlyOptions, samples_dir: Path):
        self.plan, self.warehouse, self.options, self.samples_dir = plan, warehouse, options, samples_dir
        self.changes: dict[str, tuple[str, str]] = {}      # table → (run | maybe, the stage that changes it)

    def all(self) -> list[Foreseen]:
        found = []
        for wave in self.plan.waves():
            for stage in wave:
                foreseen, effect = self.stage(stage)
                found.append(foreseen)
                if effect != SKIP:
                    for table in stage.outputs:
                        self.changes.setdefault(table, (effect, stage.key))
        return found

    def stage(self, stage: Stage) -> tuple[Foreseen, str]:
        """The stage's verdict, and whether its tables change tonight (run), may (maybe) or not (skip)."""
        if stage.skip:
            return Foreseen(stage.kind, stage.name, SKIP, stage.skip), SKIP
        if stage.gated:
            verdict, why = self.gated(stage)
            return Foreseen(stage.kind, stage.name, verdict, why), verdict
        if not stage.files:
            why = stage.about or "runs every night"
            return Foreseen(stage.kind, stage.name, RUN, f"{why}: what it brings is seen only when it runs"), MAYBE
        return self.replay(stage)

    def replay(self, stage: Stage) -> tuple[Foreseen, str]:
        files = files_fingerprint(stage.files, self.samples_dir)
        last = self.warehouse.last_success(stage)
        head = f"replays {len(files)} file(s)"
        if last is None:
            return Foreseen(stage.kind, stage.name, RUN, f"{head}, never replayed to success before"), RUN
        before, run_id = last[1].get("files", {}), last[2]
        new = sorted(set(files) - set(before))
        changed = sorted(f for f in files if f in before and before[f] != files[f])
        gone = sorted(set(before) - set(files))
        if not (new or changed or gone):
            if self.options.reparse:
                return Foreseen(stage.kind, stage.name, RUN, f"{head} and parses them again (--reparse), "
                                                             f"unchanged since run {run_id}"), MAYBE
            return Foreseen(stage.kind, stage.name, RUN, f"{head}, unchanged since run {run_id}: its tables stay "
                                                         "as they are"), SKIP
        said = [f"{len(found)} {what} ({_listed(found)})" for found, what in
                ((new, "new"), (changed, "changed"), (gone, "gone")) if found]
        return Foreseen(stage.kind, stage.name, RUN, f"{head}: {'; '.join(said)} since run {run_id}"), RUN

    def gated(self, stage: Stage) -> tuple[str, str]:
        """As nightly_runner._gated decides, with what the stages before it will change."""
        upstream = {t: self.changes[t] for t in stage.inputs if t in self.changes}
        missing = [t for t in stage.inputs if not self.warehouse.has(t)]
        fingerprint, per_table = (None, {}) if missing else inputs_fingerprint(self.warehouse.con, stage.inputs)
        empty = [t for t, fp in per_table.items() if fp["rows"] == 0]
        for absent, what in ((missing, "missing"), (empty, "empty")):
            if [t for t in absent if t not in upstream]:           # nothing tonight writes it: as the runner skips
                return SKIP, f"input {what}: {', '.join(t for t in absent if t not in upstream)}"
            if absent:
                return self._after_upstream({t: upstream[t] for t in absent},
                                            f"{_listed(absent)} {'is' if len(absent) == 1 else 'are'} {what} now")
        depends = stage.depends(self.warehouse.con) if stage.depends else None
        if depends:
            fingerprint = value_fingerprint({"tables": fingerprint, "depends": depends})
        if self.options.force:
            return RUN, "--force"
        if stage.unwritten is not None and stage.unwritten():
            return RUN, "its output is not there yet"
        last = self.warehouse.last_success(stage)
        if last is None:
            return RUN, "never ran to success before"
        recorded, inputs, run_id = last
        if recorded != fingerprint:
            return RUN, f"changed since run {run_id}: {self._differences(inputs, per_table, depends)}"
        if upstream:
            return self._after_upstream(upstream, f"inputs unchanged since run {run_id}")
        return SKIP, f"inputs unchanged since run {run_id}"

    @staticmethod
    def _after_upstream(upstream: dict[str, tuple[str, str]], otherwise: str) -> tuple[str, str]:
        """Run when a stage before it will change one of its inputs; maybe when one may (a live source)."""
        certain = sorted(t for t, (verdict, _) in upstream.items() if verdict == RUN)
        if certain:
            by = sorted({upstream[t][1] for t in certain})
            what = certain[0] if len(certain) == 1 else f"{len(certain)} of its inputs"
            return RUN, f"{' and '.join(by)} change{'s' if len(by) == 1 else ''} {what} tonight"
        by = sorted({stage for _, stage in upstream.values()})
        return MAYBE, f"depends on what {' and '.join(by)} bring{'s' if len(by) == 1 else ''}: {otherwise}"

    @staticmethod
    def _differences(inputs: dict, per_table: dict, depends: dict | None) -> str:
        before = inputs.get("tables", {})
        said = []
        for table, now in sorted(per_table.items()):
            then = before.get(table)
            if then is None:
                said.append(f"{table} (new input)")
            elif then != now:
                said.append(f"{table} ({then['rows']} → {now['rows']} rows)" if then["rows"] != now["rows"]
                            else f"{table} (content)")
        then_depends = inputs.get("depends") or {}
        said += [what for part, what in (("llm", "LLM choices"), ("prompts", "prompt templates"), ("options", "options"))
                 if (depends or {}).get(part) != then_depends.get(part)]
        return ", ".join(said) or "its inputs"
