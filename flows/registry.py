"""Every source, builder, evaluation and release by name, with what it reads and writes: the one list
the CLI, the nightly and the deployments read (a test checks deployments/prefect.yaml against it).

A flow is imported only when its entry is used (`entry.flow()`), so reading the registry stays cheap.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

EVAL_STORE = ("eval.runs", "eval.item_outputs", "eval.metrics")


@dataclass(frozen=True)
class FlowEntry:
    name: str
    description: str
    load_flow: Callable[[], Callable]
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()

    def flow(self):
        return self.load_flow()

    def run(self, settings, **kwargs) -> dict:
        """Run the flow on `settings`' warehouse (a subflow inside a running flow) and return its report;
        caseforge.flows.common.FlowCrashed when it ended without one."""
        from caseforge.flows.common import report_of

        return report_of(self.flow()(db=str(settings.db_path), **kwargs, return_state=True))


@dataclass(frozen=True)
class Source(FlowEntry):
    archive_source: str = ""
    samples: dict[str, str] | None = None   # flow argument → its path under the samples folder (--from-samples)
    live: bool = True                       # fetches from upstream without files given


@dataclass(frozen=True)
class Builder(FlowEntry):
    nightly: bool = False                   # the nightly rebuilds it when its inputs changed
    nightly_options: dict = field(default_factory=dict)


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


def _scotus_release():
    from caseforge.tasks.oyez.release import write
    return write


def _casefacts_release():
    from caseforge.tasks.casefacts.release import write
    return write


def _aquaechr_release():
    from caseforge.tasks.aquaechr.release import write
    return write


SOURCES: dict[str, Source] = {s.name: s for s in (
    Source("oyez", "U.S. Supreme Court cases from api.oyez.org (or replayed case-detail JSON files)", _oyez,
           outputs=("curated.scotus_cases", "curated.scotus_legacy"), archive_source="oyez",
           samples={"from_dir": "oyez/cases", "legacy_table": "oyez/legacy_justice_table.csv"}),
    Source("hudoc", "ECHR judgments from HUDOC: metadata and bodies split into numbered paragraphs", _hudoc,
           outputs=("curated.echr_judgments", "curated.echr_paragraphs"), archive_source="hudoc",
           samples={"from_dir": "hudoc"}),
    Source("guides", "ECHR case-law guides: paragraphs and citations resolved to HUDOC itemids", _guides,
           inputs=("curated.echr_judgments",), outputs=("curated.guide_paragraphs", "curated.guide_citations"),
           archive_source="guides", samples={"from_dir": "echr_guides"}),
    Source("cn", "Chinese judgments from bulk dumps (or the site's API with your own session): sections, "
                 "filters, representatives", _cn,
           outputs=("curated.cn_judgments", "curated.cn_filter_decisions", "curated.cn_representatives"),
           archive_source="cn", samples={"from_dir": "cn"}, live=False),
    Source("barexam", "Bar Exam QA questions and passages from files", _barexam,
           outputs=("curated.barexam_questions", "curated.barexam_passages"), archive_source="barexam",
           samples={"from_dir": "barexam"}, live=False),
)}

BUILDERS: dict[str, Builder] = {b.name: b for b in (
    Builder("casefacts", "CaseFacts claims from curated.scotus_cases", _casefacts_build,
            inputs=("curated.scotus_cases",), outputs=("curated.casefacts_claims",)),
    Builder("aquaechr", "AQuAECHR attributed QA pairs from the ECHR guides", _aquaechr_build,
            inputs=("curated.guide_paragraphs", "curated.guide_citations", "curated.echr_paragraphs",
                    "curated.echr_judgments"), outputs=("curated.aquaechr_qa",)),
    Builder("casegen", "CaseGen drafting items from gold sections of curated.cn_judgments", _casegen_build,
            inputs=("curated.cn_judgments",), outputs=("curated.casegen_items", "curated.casegen_item_skips"),
            nightly=True),
)}

EVALUATIONS: dict[str, Evaluation] = {e.name: e for e in (
    Evaluation("casefacts", "CaseFacts claims: retrieval recall, evidence and verdict scores", _casefacts_eval,
               inputs=("curated.scotus_cases", "curated.scotus_legacy")),
    Evaluation("case", "Bar Exam QA: CASE (advocates and a seeded persona jury) and its baselines", _case_eval,
               inputs=("curated.barexam_questions", "curated.barexam_passages")),
    Evaluation("casegen", "CaseGen: generate, judge, score, report", _casegen_eval,
               inputs=("curated.casegen_items",)),
    Evaluation("aquaechr", "AQuAECHR attributed QA: closed book, retrieve-then-generate, post-hoc attribution",
               _aquaechr_eval, inputs=("curated.aquaechr_qa", "curated.echr_paragraphs")),
    Evaluation("aquaechr-filter", "AQuAECHR: the quality judge's F1 against expert scores", _aquaechr_judge),
)}

RELEASES: dict[str, Release] = {r.name: r for r in (
    Release("scotus", "U.S. Supreme Court case summaries (curated.scotus_cases)", _scotus_release,
            inputs=("curated.scotus_cases",)),
    Release("casefacts", "CaseFacts claims per split", _casefacts_release, inputs=("curated.casefacts_claims",)),
    Release("aquaechr", "AQuAECHR kept question–answer pairs", _aquaechr_release, inputs=("curated.aquaechr_qa",)),
)}
