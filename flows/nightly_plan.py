"""The nightly as a declared plan: every stage is data (its kind and name, the tables it reads and writes, what
it waits for, whether it runs only when its inputs changed, whether a failed stage upstream holds it back) beside
the function that does its work. caseforge.flows.nightly_runner walks the plan; caseforge.flows.nightly_forecast
reads it without running anything (`caseforge run nightly --plan`).

Adding a stage is one entry in `build_plan` and its function. The `source health` stages show the shape: each
waits for its source and `checks` the source's tables; when one fails, every stage that `holds` (the releases)
and reads one of those tables, or a table a stage made from them, is held back with one line saying why: the
plan's one rule, `Plan.held_back`.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from caseforge.flows import registry
from caseforge.settings import Settings
from caseforge.stage_report import StageReport
from caseforge.store import StoreError
from caseforge.warehouse.statements import run_sql

# the kinds of today's plan, in the order they run
KINDS = ("source", "source health", "builder", "evaluation", "review", "export")
NOT_REBUILT = ("source", "source health", "publish")     # kinds that rebuild nothing when they run


@dataclass
class NightlyOptions:
    from_samples: bool = False
    samples_dir: Path | None = None
    release_dir: Path | str | None = None       # a folder, or a store URL (s3://bucket/prefix)
    sources: list[str] | None = None           # None: all registered
    force: bool = False                        # run builders, evaluations and exports even when nothing changed
    reparse: bool = False                      # every source parses all its payloads again (a parser fix)


@dataclass(frozen=True)
class Stage:
    kind: str                           # source | source health | builder | evaluation | review | export
    name: str
    work: Callable = field(repr=False)  # work(night) -> a StageReport (or its dict), or what a release wrote
    inputs: tuple[str, ...] = ()        # tables it reads
    outputs: tuple[str, ...] = ()       # tables it writes
    checks: tuple[str, ...] = ()        # tables it vouches for without writing them (a health check)
    after: tuple[str, ...] = ()         # kinds ("source") or stages ("builder casefacts") it waits for
    gated: bool = False                 # runs only when its inputs (and `depends`) changed since its last success
    holds: bool = False                 # held back when a stage that writes or checks one of its inputs failed
    parallel: bool = False              # runs beside the other parallel stages ready with it, each in a thread
    depends: Callable[[object], dict | None] | None = field(default=None, repr=False)  # depends(con): what besides
    #                                   its tables decides it
    unwritten: Callable[[], bool] | None = field(default=None, repr=False)  # its output is absent: runs anyway
    files: tuple[Path, ...] = ()        # the files it replays (a source from samples), fingerprinted at success
    skip: str = ""                      # why it cannot run tonight, known before the night starts
    about: str = ""                     # what it does, in a few words (`--plan`)

    @property
    def key(self) -> str:
        return f"{self.kind} {self.name}"

    @property
    def task_name(self) -> str:
        """Its task run's name in Prefect, and its subflow's after the nightly's name."""
        return f"{self.kind}-{self.name}".replace(" ", "-")


class PlanError(ValueError):
    """A plan that cannot run as declared (an unknown stage waited for, a loop, a stage that holds but may run
    before a stage that writes its inputs)."""


class Plan:
    def __init__(self, stages: list[Stage]):
        self.stages = list(stages)
        self.by_key = {stage.key: stage for stage in self.stages}
        problems = [f"{key} is declared twice" for key in self.by_key
                    if sum(s.key == key for s in self.stages) > 1]
        kinds = {stage.kind for stage in self.stages} | set(KINDS)
        problems += [f"{stage.key} waits for {wanted!r}, which is no kind nor stage of the plan"
                     for stage in self.stages for wanted in stage.after
                     if wanted not in kinds and wanted not in self.by_key]
        if problems:
            raise PlanError("; ".join(problems))
        self.levels = self._levels()
        self._check_holds()

    def waits_for(self, stage: Stage) -> list[Stage]:
        """The stages `stage` waits for: those of the kinds and keys in its `after`."""
        return [other for other in self.stages if other is not stage
                and (other.kind in stage.after or other.key in stage.after)]

    def _levels(self) -> dict[str, int]:
        levels: dict[str, int] = {}

        def level(stage: Stage, path: tuple[str, ...]) -> int:
            if stage.key in path:
                raise PlanError(f"the plan waits in a circle: {' → '.join(path + (stage.key,))}")
            if stage.key not in levels:
                levels[stage.key] = 1 + max((level(o, path + (stage.key,)) for o in self.waits_for(stage)),
                                            default=-1)
            return levels[stage.key]

        for stage in self.stages:
            level(stage, ())
        return levels

    def _check_holds(self) -> None:
        """A stage that holds must come after every stage writing or checking its inputs, so that the rule is
        decided on stages that ended."""
        late = [f"{stage.key} reads {table} from {other.key} but does not wait for it"
                for stage in self.stages if stage.holds for table in stage.inputs
                for other in self.writers_of(table) if self.levels[other.key] >= self.levels[stage.key]]
        if late:
            raise PlanError("; ".join(late))

    def writers_of(self, table: str) -> list[Stage]:
        return [stage for stage in self.stages if table in stage.outputs or table in stage.checks]

    def waves(self) -> list[list[Stage]]:
        """The stages in the order they run: each wave after every stage it waits for, declared order within."""
        return [[stage for stage in self.stages if self.levels[stage.key] == level]
                for level in sorted(set(self.levels.values()))]

    def held_back(self, stage: Stage, failed: dict[str, str]) -> str | None:
        """Why `stage` does not run tonight, when it holds and a stage that writes or checks one of its inputs
        (`failed`: the keys of the stages that failed, each with its first reason) failed: its tables may be partial
        or wrong."""
        if not stage.holds:
            return None
        reasons = [f"{table} comes from {', '.join(w.key for w in writers)}, which failed tonight"
                   for table in sorted(stage.inputs)
                   if (writers := [w for w in self.writers_of(table) if w.key in failed])]
        unsound = self.unsound_tables(failed)
        reasons += [f"{table} comes from {unsound[table]}" for table in sorted(stage.inputs)
                    if table in unsound and not any(w.key in failed for w in self.writers_of(table))]
        return "held back: " + "; ".join(reasons) if reasons else None

    def unsound_tables(self, failed: dict[str, str]) -> dict[str, str]:
        """Table → where it comes from, for the tables made from a source whose health failed tonight: a failed
        health check says its source's tables may be wrong though every gate passed, so what stages made from them
        tonight is unsound too (a failed source or builder only leaves its own tables partial)."""
        origin = {table: f"{check.key}, which failed tonight ({failed[check.key]})" for check in self.stages
                  if check.kind == "source health" and check.key in failed for table in check.checks}
        unsound: dict[str, str] = {}
        for stage in sorted(self.stages, key=lambda s: self.levels[s.key]):
            read = [t for t in stage.inputs if t in origin or t in unsound]
            for table in stage.outputs if read else ():
                if table not in origin and table not in unsound:
                    unsound[table] = f"{stage.key}, which reads {read[0]} from {origin.get(read[0]) or unsound[read[0]]}"
        return unsound


# --- today's plan, from the registry ---

def release_location(release_dir: str | None) -> Path | str | None:
    """--release-dir as a folder, or as the store URL it is (a Path would fold `s3://` into `s3:/`)."""
    from caseforge.release.stored import is_store_url

    return None if not release_dir else release_dir if is_store_url(release_dir) else Path(release_dir)


def samples_folder(settings: Settings, options: NightlyOptions) -> Path:
    """Where the sources' samples are; with --from-samples it must exist (refused before any work)."""
    samples_dir = Path(options.samples_dir or settings.samples_dir)
    if options.from_samples and not samples_dir.is_dir():
        raise FileNotFoundError(f"samples folder {samples_dir} does not exist (set CASEFORGE_SAMPLES or --samples)")
    return samples_dir


def source_kwargs(source: registry.Source, from_samples: bool, samples_dir: Path) -> dict | None:
    """The flow arguments of a source: none live; its sample paths with --from-samples (None: no samples)."""
    if not from_samples:
        return {}
    if source.samples is None:
        return None
    paths = {arg: samples_dir / rel for arg, rel in source.samples.items()}
    if not all(path.exists() for path in paths.values()):
        return None
    return {arg: str(path) for arg, path in paths.items()}


def as_report(result, name: str) -> StageReport:
    """What a stage's flow returned, as a StageReport (a flow's final state carries its report as a dict)."""
    if isinstance(result, StageReport):
        return result
    if isinstance(result, dict):
        return StageReport(name=result.get("name", name), counts=dict(result.get("counts", {})),
                           failures=list(result.get("failures", [])), run_id=result.get("run_id"),
                           results=dict(result.get("results", {})), ended=result.get("ended"))
    raise TypeError(f"{name}: a stage must return a StageReport or its dict, got {type(result).__name__}")


def files_under(paths) -> tuple[Path, ...]:
    """Every file at or under `paths`, sorted."""
    found = []
    for path in map(Path, paths):
        found += sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return tuple(found)


def files_fingerprint(files: tuple[Path, ...], root: Path) -> dict[str, str]:
    """Each file (its path under `root`) → the sha256 of its content."""
    return {path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path):
            hashlib.sha256(path.read_bytes()).hexdigest() for path in files}


def depends_on(entry: registry.FlowEntry, options: dict, settings: Settings) -> dict:
    """What besides its input tables decides a builder's or an evaluation's output: the backend, model and
    options each of its LLM steps resolves to under `settings`, the content of its prompt templates, and its
    options."""
    from caseforge.llm.config import llm_choice
    from caseforge.settings import PROMPTS_DIR

    choices = {}
    for step, role in sorted(entry.llm_steps().items()):
        try:
            choices[step] = llm_choice(settings, step, role, options.get("llm"), options.get("model")).identity()
        except ValueError as exc:          # no model for a role: that, too, is part of the configuration
            choices[step] = {"unresolved": str(exc)}
    prompts = {path.relative_to(PROMPTS_DIR).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
               for pattern in entry.prompts for path in sorted(PROMPTS_DIR.glob(pattern))}
    return {"llm": choices, "prompts": prompts, "options": options}


def _source_stage(settings: Settings, source: registry.Source, options: NightlyOptions, samples_dir: Path,
                  writers: dict[str, str]) -> Stage:
    """`writers`: tonight's sources by the tables they write; a source reading one of them waits for its writer."""
    kwargs = source_kwargs(source, options.from_samples, samples_dir)
    skip, files = "", ()
    if not options.from_samples and not source.live:
        skip = (f"no live fetcher: load its files with `caseforge ingest {source.name} --from-dir DIR` "
                "(or run the nightly with --from-samples)")
    elif kwargs is None:
        skip = "no samples for it (registry samples, or its folder is absent)"
    elif options.from_samples:
        files = files_under(kwargs.values())
    if options.reparse and kwargs:
        kwargs = {**kwargs, "reparse": True}

    def work(night) -> StageReport:
        from caseforge.warehouse.connection import open_warehouse

        with open_warehouse(settings.db_path) as con:
            before = run_sql(con, "ops/count_payloads.sql", [source.archive_source]).fetchone()[0]
        report = as_report(source.run(settings, **kwargs), source.name)
        with open_warehouse(settings.db_path) as con:
            after = run_sql(con, "ops/count_payloads.sql", [source.archive_source]).fetchone()[0]
        report.counts["new_payloads"] = after - before
        return report

    about = f"replays {len(files)} file(s) from {samples_dir}" if files else "fetches upstream"
    after = tuple(sorted({f"source {writers[t]}" for t in source.inputs if writers.get(t, source.name) != source.name}))
    return Stage("source", source.name, work, inputs=source.inputs, outputs=source.outputs, after=after, parallel=True,
                 files=files, skip=skip, about=about)


def _flow_stage(settings: Settings, kind: str, entry: registry.FlowEntry, options: dict, after: tuple[str, ...]):
    return Stage(kind, entry.name, lambda night: entry.run(settings, **options), inputs=entry.inputs,
                 outputs=entry.outputs, after=after, gated=True, depends=lambda con: depends_on(entry, options, settings),
                 about=entry.description)


def no_release_yet(folder: Path | str) -> bool:
    """Whether the release at `folder` is still to be written (a store that cannot say: written again, and its
    stage then says what is wrong with the store)."""
    from caseforge.release.stored import current_release

    try:
        return current_release(folder) is None
    except StoreError:
        return True


def _health_stage(settings: Settings, source: registry.Source, source_stage: Stage) -> Stage:
    """After its source: judges tonight's counts against the source's earlier nights (caseforge.flows.nightly_health);
    failed, it holds back the releases made from the source's tables."""
    from caseforge.flows.nightly_health import STAGE, judge_source

    return Stage(STAGE, source.name, lambda night: judge_source(night, source, settings.file.source_health),
                 checks=source.outputs, after=(source_stage.key,),
                 skip=f"{source_stage.key} does not run tonight" if source_stage.skip else "",
                 about="judges tonight's listing, yield and silence against the source's earlier nights")


def _review_stage(settings: Settings, benchmark: str) -> Stage:
    """[review] nightly: pull the benchmark's annotations, then push its new sample (caseforge.flows.nightly_review)."""
    from caseforge.flows.nightly_review import review_stage

    return Stage("review", benchmark, lambda night: review_stage(settings, night.connection(), benchmark),
                 after=("source", "builder", "evaluation"), about="pulls its annotations and pushes new items to review")


def _export_stage(settings: Settings, release: registry.Release, folder) -> Stage:
    from caseforge.flows.nightly_review import review_depends

    return Stage("export", release.name, lambda night: release.write(night.connection(), folder),
                 inputs=release.inputs, after=("source", "builder", "evaluation", "review"), gated=True, holds=True,
                 depends=lambda con: review_depends(con, release.name, settings),
                 unwritten=lambda: no_release_yet(folder), about=f"writes the release to {folder}")


def build_plan(settings: Settings, options: NightlyOptions, sources: dict[str, registry.Source],
               builders: dict[str, registry.Builder], evaluations: dict[str, registry.Evaluation],
               releases: dict[str, registry.Release], release_dir) -> Plan:
    """Tonight's plan: the chosen sources (in parallel; a source reading another's tables after it), each source's
    health, then the builders, then the evaluations (each with the options of [nightly.builders.<name>] /
    [nightly.evaluations.<name>]), then the reviews ([review] nightly), then a release of each dataset into
    `release_dir`."""
    from caseforge.release.stored import child_url

    names = options.sources if options.sources is not None else sorted(sources)
    unknown = sorted(set(names) - set(sources))
    if unknown:
        raise ValueError(f"unknown source(s) {', '.join(unknown)}; known: {', '.join(sorted(sources))}")
    samples_dir = samples_folder(settings, options)
    nightly = settings.file.nightly
    writers = {table: name for name in names for table in sources[name].outputs}
    stages = [_source_stage(settings, sources[name], options, samples_dir, writers) for name in names]
    stages += [_health_stage(settings, sources[stage.name], stage) for stage in list(stages)
               if sources[stage.name].health is not None]
    stages += [_flow_stage(settings, "builder", entry, dict(nightly.builders.get(name) or {}), ("source",))
               for name, entry in sorted(builders.items())]
    stages += [_flow_stage(settings, "evaluation", entry, dict(nightly.evaluations.get(name) or {}),
                           ("source", "builder"))
               for name, entry in sorted(evaluations.items())]
    stages += [_review_stage(settings, name) for name in sorted(settings.file.review.nightly)]
    stages += [_export_stage(settings, release, child_url(release_dir, name))
               for name, release in sorted(releases.items())]
    return Plan(stages)


def registry_stages(builders=None, evaluations=None, sources=None, releases=None) -> dict:
    """The registry's entries the nightly runs, where a caller gave none (tests give doubles)."""
    return {"sources": registry.SOURCES if sources is None else sources,
            "builders": {n: b for n, b in registry.BUILDERS.items() if b.nightly} if builders is None else builders,
            "evaluations": ({n: e for n, e in registry.EVALUATIONS.items() if e.nightly} if evaluations is None
                            else evaluations),
            "releases": registry.RELEASES if releases is None else releases}
