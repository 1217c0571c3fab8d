"""Every source, builder, evaluation and release by name, with what it reads and writes: the one list
the CLI, the nightly and the deployments read (a test checks deployments/prefect.yaml against it).

A flow is imported only when its entry is used (`entry.flow()`), so reading the registry stays cheap.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from caseforge.source_health import HealthCounters

EVAL_STORE = ("eval.runs", "eval.item_outputs", "eval.metrics")


def _no_steps() -> dict[str, str]:
    return {}


_SUBFLOW_NAME: ContextVar[str | None] = ContextVar("caseforge_subflow_name", default=None)


@contextmanager
def subflow_named(name: str) -> Iterator[None]:
    """An entry run inside (a nightly stage's) is a flow run of that name, under the task run it is called in."""
    token = _SUBFLOW_NAME.set(name)
    try:
        yield
    finally:
        _SUBFLOW_NAME.reset(token)


@dataclass(frozen=True)
class FlowEntry:
    name: str
    description: str
    load_flow: Callable[[], Callable]
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    load_llm_steps: Callable[[], dict[str, str]] = _no_steps   # its LLM steps (ops.llm_calls names) → role
    prompts: tuple[str, ...] = ()           # its prompt templates, as globs under prompts/
    nightly: bool = False                   # the nightly runs it (builders, evaluations) when what it reads changed

    def flow(self):
        return self.load_flow()

    def llm_steps(self) -> dict[str, str]:
        return self.load_llm_steps()

    def run(self, settings, **kwargs) -> dict:
        """Run the flow on `settings`' warehouse (a subflow inside a running flow, named as `subflow_named`
        says) and return its report; caseforge.flows.states.FlowCrashed when it ended without one."""
        from caseforge.flows.states import report_of, run_subflow

        return report_of(run_subflow(self.flow(), {"db": str(settings.db_path), **kwargs}, _SUBFLOW_NAME.get()))


@dataclass(frozen=True)
class Source(FlowEntry):
    archive_source: str = ""
    samples: dict[str, str] | None = None   # flow argument → its path under the samples folder (--from-samples)
    live: bool = True                       # fetches from upstream without files given
    health: HealthCounters | None = None    # which of its counters the nightly's source health reads


@dataclass(frozen=True)
class Builder(FlowEntry):
    pass


@dataclass(frozen=True)
class Evaluation(FlowEntry):
    outputs: tuple[str, ...] = EVAL_STORE


@dataclass(frozen=True)
class Release:
    name: str
    description: str
    load_writer: Callable[[], Callable]     # → write(con, folder) -> caseforge.release.Release
    inputs: tuple[str, ...] = ()

    def write(self, con, folder: Path):
        return self.load_writer()(con, folder)


# --- flows, imported when used ---

def _oyez():
    from caseforge.flows.oyez import oyez_refresh
    return oyez_refresh


def _hudoc():
    from caseforge.flows.hudoc import hudoc_refresh
    return hudoc_refresh


def _guides():
    from caseforge.flows.guides import guides_refresh
    return guides_refresh


def _cn():
    from caseforge.flows.cn import cn_refresh
    return cn_refresh


def _barexam():
    from caseforge.flows.barexam import barexam_import
    return barexam_import


def _casefacts_build():
    from caseforge.flows.casefacts_build import casefacts_build
    return casefacts_build


def _aquaechr_build():
    from caseforge.flows.aquaechr_build import aquaechr_build
    return aquaechr_build


def _casegen_build():
    from caseforge.flows.casegen_build import casegen_build
    return casegen_build


def _casefacts_eval():
    from caseforge.flows.casefacts_eval import casefacts_eval
    return casefacts_eval


def _case_eval():
    from caseforge.flows.case_eval import case_eval
    return case_eval


def _casegen_eval():
    from caseforge.flows.casegen_eval import casegen_eval
    return casegen_eval


def _aquaechr_eval():
    from caseforge.flows.aquaechr_eval import aquaechr_eval
    return aquaechr_eval


def _aquaechr_judge():
    from caseforge.flows.aquaechr_eval import aquaechr_judge_agreement
    return aquaechr_judge_agreement


def _casefacts_build_steps():
    from caseforge.tasks.casefacts.config import LLM_STEPS
    return LLM_STEPS


def _aquaechr_build_steps():
    from caseforge.tasks.aquaechr.build import LLM_STEPS
    return LLM_STEPS


def _casefacts_eval_steps():
    from caseforge.tasks.casefacts.eval.systems import LLM_STEPS
    return LLM_STEPS


def _case_eval_steps():
    from caseforge.tasks.case.eval.barexam import LLM_STEPS
    return LLM_STEPS


def _casegen_eval_steps():
    from caseforge.tasks.casegen.eval.pipeline import LLM_STEPS
    return LLM_STEPS


def _aquaechr_eval_steps():
    from caseforge.tasks.aquaechr.eval.systems import LLM_STEPS
    return LLM_STEPS


def _aquaechr_judge_steps():
    from caseforge.tasks.aquaechr.eval.judge_agreement import LLM_STEPS
    return LLM_STEPS


def _scotus_release():
    from caseforge.tasks.oyez.release import write
    return write


def _casefacts_release():
    from caseforge.tasks.casefacts.release import write
    return write


def _aquaechr_release():
    from caseforge.tasks.aquaechr.release import write
    return write


def _casegen_release():
    from caseforge.tasks.casegen.release import write
    return write


SOURCES: dict[str, Source] = {s.name: s for s in (
    Source("oyez", "U.S. Supreme Court cases from api.oyez.org (or replayed case-detail JSON files)", _oyez,
           outputs=("curated.scotus_cases", "curated.scotus_legacy"), archive_source="oyez",
           samples={"from_dir": "oyez/cases", "legacy_table": "oyez/legacy_justice_table.csv"},
           health=HealthCounters(parsed="parsed", loaded="passed_gate")),
    Source("hudoc", "ECHR judgments from HUDOC: metadata and bodies split into numbered paragraphs", _hudoc,
           outputs=("curated.echr_judgments", "curated.echr_paragraphs"), archive_source="hudoc",
           samples={"from_dir": "hudoc"},
           health=HealthCounters(parsed="documents_parsed", loaded="judgments_loaded",
                                 yield_of=("paragraphs_parsed", "documents_parsed"),
                                 yield_name="paragraphs per judgment")),
    Source("guides", "ECHR case-law guides: paragraphs and citations resolved to HUDOC itemids", _guides,
           inputs=("curated.echr_judgments",), outputs=("curated.guide_paragraphs", "curated.guide_citations"),
           archive_source="guides", samples={"from_dir": "echr_guides"},
           health=HealthCounters(parsed="guides_parsed", loaded="guide_paragraphs_loaded",
                                 yield_of=("citations_parsed", "guide_pages_parsed"),
                                 yield_name="citations per guide page")),
    Source("cn", "Chinese judgments from bulk dumps (or the site's API with your own session): sections, "
                 "filters, representatives", _cn,
           outputs=("curated.cn_judgments", "curated.cn_filter_decisions", "curated.cn_representatives"),
           archive_source="cn", samples={"from_dir": "cn"}, live=False,
           health=HealthCounters(parsed="parsed", loaded="loaded", yield_of=("sections_found", "parsed"),
                                 yield_name="sections found per judgment")),
    Source("barexam", "Bar Exam QA questions and passages from files", _barexam,
           outputs=("curated.barexam_questions", "curated.barexam_passages"), archive_source="barexam",
           samples={"from_dir": "barexam"}, live=False,
           health=HealthCounters(listed=None, parsed="payloads_parsed", loaded="barexam_questions_loaded")),
)}

BUILDERS: dict[str, Builder] = {b.name: b for b in (
    Builder("casefacts", "CaseFacts claims from curated.scotus_cases", _casefacts_build,
            inputs=("curated.scotus_cases", "curated.scotus_legacy"), outputs=("curated.casefacts_claims",),
            load_llm_steps=_casefacts_build_steps, prompts=("casefacts/*.j2",), nightly=True),
    Builder("aquaechr", "AQuAECHR attributed QA pairs from the ECHR guides", _aquaechr_build,
            inputs=("curated.guide_paragraphs", "curated.guide_citations", "curated.echr_paragraphs",
                    "curated.echr_judgments"), outputs=("curated.aquaechr_qa",),
            load_llm_steps=_aquaechr_build_steps, prompts=("aquaechr/*.j2",), nightly=True),
    Builder("casegen", "CaseGen drafting items from gold sections of curated.cn_judgments", _casegen_build,
            inputs=("curated.cn_judgments",), outputs=("curated.casegen_items", "curated.casegen_item_skips"),
            nightly=True),
)}

EVALUATIONS: dict[str, Evaluation] = {e.name: e for e in (
    Evaluation("casefacts", "CaseFacts claims: retrieval recall, evidence and verdict scores", _casefacts_eval,
               inputs=("curated.scotus_cases", "curated.scotus_legacy"), load_llm_steps=_casefacts_eval_steps,
               prompts=("casefacts/eval/*.j2", "case/*.j2")),
    Evaluation("case", "Bar Exam QA: CASE (advocates and a seeded persona jury) and its baselines", _case_eval,
               inputs=("curated.barexam_questions", "curated.barexam_passages"), load_llm_steps=_case_eval_steps,
               prompts=("case/*.j2",)),
    Evaluation("casegen", "CaseGen: generate, judge, score, report", _casegen_eval,
               inputs=("curated.casegen_items",), load_llm_steps=_casegen_eval_steps, prompts=("casegen/eval/*.j2",), nightly=True),
    Evaluation("aquaechr", "AQuAECHR attributed QA: closed book, retrieve-then-generate, post-hoc attribution",
               _aquaechr_eval, inputs=("curated.aquaechr_qa", "curated.echr_paragraphs"),
               load_llm_steps=_aquaechr_eval_steps, prompts=("aquaechr/eval/*.j2",)),
    Evaluation("aquaechr-filter", "AQuAECHR: the quality judge's F1 against expert scores", _aquaechr_judge,
               load_llm_steps=_aquaechr_judge_steps, prompts=("aquaechr/judge.j2",)),
)}

def llm_steps() -> dict[str, dict[str, str]]:
    """Every pipeline's LLM steps (as ops.llm_calls names them; * matches any suffix) and their roles."""
    return {f"{verb} {name}": entry.llm_steps() for verb, group in (("build", BUILDERS), ("eval", EVALUATIONS))
            for name, entry in group.items() if entry.llm_steps()}


RELEASES: dict[str, Release] = {r.name: r for r in (
    Release("scotus", "U.S. Supreme Court case summaries (curated.scotus_cases)", _scotus_release,
            inputs=("curated.scotus_cases",)),
    Release("casefacts", "CaseFacts claims per split", _casefacts_release, inputs=("curated.casefacts_claims",)),
    Release("aquaechr", "AQuAECHR kept question–answer pairs", _aquaechr_release, inputs=("curated.aquaechr_qa",)),
    Release("casegen", "CaseGen drafting items with their inputs and references", _casegen_release,
            inputs=("curated.casegen_items",)),
)}
