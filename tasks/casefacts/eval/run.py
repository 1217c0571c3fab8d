"""One CaseFacts evaluation run: claims file → prepared claims → a system's answers → scores in the
evaluation store (caseforge.evalstore) and exported files. Plain steps; the flow makes them tasks."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from caseforge import evalstore
from caseforge.artifacts import publish_metrics
from caseforge.llm.config import Backends
from caseforge.retrieval import build_retriever
from caseforge.retrieval.corpora import scotus_case_names, scotus_corpus
from caseforge.retrieval.hybrid import Fusion, HybridRetriever
from caseforge.session import RunSession, run_session
from caseforge.settings import Settings
from caseforge.stage_report import StageReport
from caseforge.tasks.casefacts.eval import fusion as casefacts_fusion
from caseforge.tasks.casefacts.eval import retrieval
from caseforge.tasks.casefacts.eval.casenames import DEFAULT_FUZZY_THRESHOLD, CaseNameIndex
from caseforge.tasks.casefacts.eval.claims import DEFAULT_GOLD_RULE, file_sha, load_claims

log = logging.getLogger(__name__)

TASK = "casefacts"
LLM_SYSTEMS = ("closed-book", "retrieve-verify", "case")
SYSTEMS = retrieval.RETRIEVAL_SYSTEMS + LLM_SYSTEMS
# BM25 and QLM on Snowball (Porter2) stems by default, as the usual toolkits' "BM25" baseline row (docs/scoring.md,
# "CaseFacts evaluation choices", says why and what it changes). `--stemmer none` for surface forms.
DEFAULT_STEMMER = "english"
LEXICAL = ("bm25", "qlm", "hybrid")


@dataclass(frozen=True)
class Options:
    claims: str
    system: str
    k: int = 10
    missing_gold: str | None = None           # None: the gold rule's own policy (claims.GOLD_RULES)
    limit: int | None = None
    index_dir: str | None = None
    mu: float = 2000.0
    rrf_k: int = 60
    dense_model: str | None = None
    fuzzy_threshold: float = DEFAULT_FUZZY_THRESHOLD
    llm: str | None = None
    model: str | None = None
    replay_file: str | None = None
    retriever: str = "bm25"
    max_rounds: int = 2
    seed: int = 0
    out_dir: str | None = None
    gold_rule: str = DEFAULT_GOLD_RULE
    stemmer: str | None = DEFAULT_STEMMER
    fusion: str = casefacts_fusion.DEFAULT_FUSION.method
    fusion_weights: tuple[float, ...] | None = None   # None: DEFAULT_FUSION's for `score`, equal for `rrf`
    tune_on: str | None = None                          # a train claims file: tune the fusion on it

    def hybrid_fusion(self) -> Fusion:
        """The fusion used unless --tune-on chooses one."""
        if self.fusion == "score":
            weights = tuple(self.fusion_weights) if self.fusion_weights else casefacts_fusion.DEFAULT_FUSION.weights
        else:
            weights = tuple(self.fusion_weights or ())
        return Fusion(self.fusion, weights, self.rrf_k, casefacts_fusion.DEFAULT_FUSION.depth)

    def params(self) -> dict:
        """What identifies the run besides the system and the claims (see evalstore.eval_run_id)."""
        params = {"k": self.k, "gold_rule": self.gold_rule,
                  "missing_gold": retrieval.missing_gold_policy(self.gold_rule, self.missing_gold),
                  "limit": self.limit, "fuzzy_threshold": self.fuzzy_threshold}
        if self.system in LEXICAL or (self.system in ("retrieve-verify", "case") and self.retriever in LEXICAL):
            params["stemmer"] = self.stemmer or "none"
        if self.system == "qlm" or self.retriever == "qlm":
            params["mu"] = self.mu
        if self.system == "hybrid" or (self.system in ("retrieve-verify", "case") and self.retriever == "hybrid"):
            if self.tune_on:
                params["fusion"] = {"tuned_on": Path(self.tune_on).name, "sha": file_sha(Path(self.tune_on))}
            else:
                params["fusion"] = self.hybrid_fusion().params()
        if self.system in LLM_SYSTEMS:
            choice = Backends(self.llm, {"system": self.model}).choice(f"casefacts-{self.system}", "system")
            params.update({"llm": choice.backend, "model": choice.model})
            if self.system != "closed-book":
                params["retriever"] = self.retriever
            if self.system == "case":
                params.update({"max_rounds": self.max_rounds, "seed": self.seed})
        return params


def prepare_step(session: RunSession, options: Options):
    claims, problems = load_claims(Path(options.claims))
    if options.limit:
        claims = claims[:options.limit]
    for item_id, reason in problems:
        session.report.fail(f"{item_id}: {reason}")
    corpus = scotus_corpus(session.con)
    names = CaseNameIndex(scotus_case_names(session.con), threshold=options.fuzzy_threshold)
    prepared = retrieval.prepare(claims, names, set(corpus.ids), options.missing_gold, options.gold_rule)
    session.report.add("claims", len(claims))
    session.report.add("claims_invalid", len(problems))
    session.report.add("skipped_gold_missing", sum(1 for p in prepared if p.skip_reason))
    invalid = [evalstore.ItemResult(item_id, None, {}, {}, {}, "failed", reason) for item_id, reason in problems]
    return corpus, names, prepared, invalid


def answer_step(session: RunSession, options: Options, corpus, names, prepared):
    def retriever_for(kind: str):
        retriever = build_retriever(kind, corpus, options.index_dir, mu=options.mu, rrf_k=options.rrf_k,
                                    dense_model=options.dense_model, stemmer=options.stemmer,
                                    fusion=options.hybrid_fusion())
        description = retriever.describe()
        if kind == "hybrid" and options.tune_on:
            tuned = casefacts_fusion.tune_on_claims(Path(options.tune_on), names, set(corpus.ids), retriever.parts,
                                                    [p.claim.claim for p in prepared], options.gold_rule,
                                                    options.missing_gold)
            retriever = HybridRetriever(corpus, retriever.parts, fusion=tuned.fusion)
            description = f"{retriever.describe()}; {tuned.describe()} ({Path(options.tune_on).name})"
        session.report.results["retriever"] = description
        return retriever

    if options.system in retrieval.RETRIEVAL_SYSTEMS:
        return retrieval.evaluate_retrieval(prepared, retriever_for(options.system), options.k)
    from caseforge.tasks.casefacts.eval import systems

    return systems.run_llm_system(session, options.system, prepared, corpus, names, retriever_for,
                                  Backends(options.llm, {"system": options.model}, replay_file=options.replay_file),
                                  retriever=options.retriever, k=options.k, max_rounds=options.max_rounds,
                                  seed=options.seed)


def composition_metrics(corpus) -> dict[str, float]:
    """The corpus's size and composition as metrics (`corpus_docs`, `corpus_docs/<kind>`), stored with every run."""
    metrics = {"corpus_docs": float(len(corpus))}
    metrics.update({f"corpus_docs/{kind}": float(count) for kind, count in corpus.composition.items()})
    return metrics


def describe_composition(corpus) -> str:
    kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(corpus.composition.items(),
                                                                     key=lambda kv: COMPOSITION_ORDER.get(kv[0], 9)))
    return f"{len(corpus)} documents" + (f": {kinds}" if kinds else "")


COMPOSITION_ORDER = {"facts+question+conclusion": 0, "api_partial": 1, "facts_only": 2}


@dataclass(frozen=True)
class Steps:
    prepare: Callable = prepare_step
    answer: Callable = answer_step


def evaluate(settings: Settings, options: Options, steps: Steps | None = None) -> StageReport:
    """Score `options.system` on the claims file: retrieval recall, Evidence/Verdict metrics, per class.
    The report's results carry the evaluation run id."""
    steps = steps or Steps()
    if options.system not in SYSTEMS:
        raise ValueError(f"unknown system {options.system!r} (choose from {', '.join(SYSTEMS)})")
    params = options.params()
    sha = file_sha(Path(options.claims))
    run_id = evalstore.eval_run_id(TASK, options.system, sha, params)
    started = datetime.now(timezone.utc)
    with run_session(settings, "eval", f"casefacts:{options.system}") as session:
        session.report.results["eval_run_id"] = run_id
        corpus, names, prepared, invalid = steps.prepare(session, options)
        items = invalid + steps.answer(session, options, corpus, names, prepared)
        metrics = retrieval.summarise(items)
        metrics.update(composition_metrics(corpus))
        notes = {"n": retrieval.describe_gold_rule(options.gold_rule, options.missing_gold),
                 "corpus_docs": describe_composition(corpus)}
        if session.report.results.get("retriever"):
            notes["recall@1"] = session.report.results["retriever"]
        session.report.add("scored", int(metrics["n"]))
        session.report.add("failed_items", int(metrics["n_failed"]))
        for item in items:
            if item.status == "failed" and item not in invalid:
                session.report.fail(f"{item.item_id}: {item.reason}")
        evalstore.save_run(session.con, run_id, TASK, options.system, Path(options.claims).name, sha, params, items,
                           metrics, started, notes=notes)
        header = {"task": TASK, "system": options.system, "dataset": Path(options.claims).name, "params": params}
        out_dir = Path(options.out_dir) if options.out_dir else settings.reports_dir / "casefacts"
        paths = evalstore.export_run(out_dir, run_id, header, items, metrics)
        log.info("casefacts %s: n=%d exported %s", options.system, metrics["n"], ", ".join(map(str, paths)))
        publish_metrics(f"casefacts-{options.system}", f"CaseFacts {options.system}", metrics)
    return session.report
