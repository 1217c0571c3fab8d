"""`caseforge eval BENCHMARK`: run an evaluation's flow and print the metrics it stored; one subcommand
per evaluation in caseforge.flows.registry.EVALUATIONS, each with only its own options."""
from __future__ import annotations

import argparse
import json

from caseforge.cli.common import (add_db_option, add_entry_subcommands, add_llm_cache_options, finish, flow_arguments,
                                  notes_out, run_flow)
from caseforge.flows import registry

RETRIEVERS = ("bm25", "qlm", "dense", "hybrid")
KEY_METRICS = ("n", "recall@1", "recall@5", "recall@10", "evidence_score", "evidence_score_f1",
               "verdict_accuracy", "verdict_macro_f1", "verdict_score", "accuracy", "accuracy_unanimous", "n_unanimous",
               "accuracy_split",
               "n_split", "n_skipped_gold_missing", "n_failed",
               "rouge_l", "bertscore_f1", "claim_recall", "citation_faithfulness", "citation_f1", "evidence_nli",
               "citations_per_query", "invalid_citations", "nli_failed")
CASEGEN_KEY_METRICS = ("n", "n_failed", "n_inputs_cut", "judge_overall", "rougeL_char_f1", "rougeL_word_f1",
                       "rougeL_compat_f1", "bleu4", "bertscore_f1", "n_judge_failed", "n_judge_scores_missing",
                       "n_judge_scores_invalid")


def _retrieval_options(parser: argparse.ArgumentParser, k: int) -> None:
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--k", type=int, default=k, help=f"evidence passed on / scored (default {k})")
    parser.add_argument("--llm", help="LLM backend: replay, openai, llamacpp, vllm (default: the settings file's)")
    parser.add_argument("--model", help="the evaluated model (default: the settings file's)")
    parser.add_argument("--replay-file", dest="replay_file", help="replay backend: JSONL of recorded answers")
    parser.add_argument("--index-dir", dest="index_dir", help="folder of persisted indexes (default data/indexes)")
    parser.add_argument("--mu", type=float, default=2000.0, help="QLM Dirichlet prior (default 2000)")
    parser.add_argument("--rrf-k", dest="rrf_k", type=int, default=60, help="hybrid reciprocal rank fusion k (default 60)")
    parser.add_argument("--dense-model", dest="dense_model",
                        help="sentence-transformers model folder (default all-MiniLM-L6-v2 package)")
    parser.add_argument("--limit", type=int, help="only the first N items")
    parser.add_argument("--out-dir", dest="out_dir", help="where the exported metrics JSON / items CSV go "
                                                          "(default: <db dir>/<db name>-reports/<benchmark>)")


def casefacts_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--claims", required=True, help="claims JSON in the released CaseFacts format")
    parser.add_argument("--system", required=True, choices=(*RETRIEVERS, "closed-book", "retrieve-verify", "case"))
    parser.add_argument("--retriever", default="bm25", choices=RETRIEVERS,
                        help="retriever used by retrieve-verify and case (default bm25)")
    parser.add_argument("--gold-rule", dest="gold_rule", choices=("paper", "caseforge"), default="paper",
                        help="which names are gold: 'paper' (default; the authors' code: the claim's case_name only, "
                             "names missing from the corpus dropped) or 'caseforge' (case_name plus every "
                             "overruling_case); the rule used is printed with the results")
    parser.add_argument("--missing-gold", dest="missing_gold", choices=("skip", "miss", "drop"),
                        help="gold names not in the corpus: skip the claim, count them as misses (every claim "
                             "scored), or drop them (a claim with none left is skipped); default: the gold "
                             "rule's own (paper: drop, caseforge: skip)")
    parser.add_argument("--stemmer", choices=("english", "none"), default="english",
                        help="BM25/QLM tokens: Snowball English stems (default, as BM25 toolkits do) or surface "
                             "forms ('none')")
    parser.add_argument("--fusion", choices=("score", "rrf"), default="score",
                        help="hybrid: min-max score fusion (default, weights 0.4 bm25 / 0.6 dense, chosen on the "
                             "released train split) or reciprocal rank fusion (--rrf-k, equal weights)")
    parser.add_argument("--fusion-weights", dest="fusion_weights", type=_weights,
                        help="hybrid: comma-separated weights of bm25,dense (e.g. 0.4,0.6)")
    parser.add_argument("--tune-on", dest="tune_on",
                        help="hybrid: train claims file to choose the fusion on (never the --claims file); the "
                             "choice and its train numbers are printed")
    parser.add_argument("--max-rounds", dest="max_rounds", type=int, default=2,
                        help="case: query-rewrite rounds per advocate")
    parser.add_argument("--seed", type=int, default=0, help="case: jury sampling seed")
    _retrieval_options(parser, k=10)


def _weights(text: str) -> list[float]:
    try:
        weights = [float(w) for w in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"weights must be numbers separated by commas, got {text!r}") from None
    if any(w < 0 for w in weights) or not any(weights):
        raise argparse.ArgumentTypeError(f"weights must be non-negative and not all zero, got {text!r}")
    return weights


def case_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--system", required=True,
                        choices=("llm-only", "bm25-rag", "qlm-rag", "dense-rag", "oracle", "case"))
    parser.add_argument("--retriever", default="bm25", choices=RETRIEVERS,
                        help="case: retriever the advocates search with")
    parser.add_argument("--max-rounds", dest="max_rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    _retrieval_options(parser, k=5)


def casegen_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", dest="models", action="append",
                        help="model to evaluate (repeat for several; default: the settings file's)")
    parser.add_argument("--llm", help="backend for the evaluated models: replay, openai, llamacpp, vllm "
                                      "(default: the settings file's)")
    parser.add_argument("--judge-model", dest="judge_model", help="judge model (default: the settings file's)")
    parser.add_argument("--judge-llm", dest="judge_llm", help="backend for the judge (default: --llm)")
    parser.add_argument("--replay-file", dest="replay_file", help="replay file for the replay backend")
    parser.add_argument("--judge-replay-file", dest="judge_replay_file",
                        help="replay file for the judge (default: --replay-file)")
    parser.add_argument("--task", choices=["defense", "facts", "reasoning", "judgment"], help="one task only")
    parser.add_argument("--limit", type=int, help="at most this many items per task")
    parser.add_argument("--max-input-chars", dest="max_input_chars", type=int, default=8000,
                        help="input budget; longer inputs are cut from the middle")
    parser.add_argument("--max-input-tokens", dest="max_input_tokens", type=int,
                        help="input budget in tokens instead (needs --tokenizer)")
    parser.add_argument("--tokenizer", help="LOCAL tokenizer folder that counts --max-input-tokens")
    parser.add_argument("--max-new-tokens", dest="max_new_tokens", type=int, default=1024)
    parser.add_argument("--bert-model", dest="bert_model",
                        help="LOCAL folder of a Chinese BERT for BERTScore (never downloaded); omit to skip")
    parser.add_argument("--human-scores", dest="human_scores",
                        help="CSV/JSONL of item_id, model, score: report agreement with people")
    parser.add_argument("--out-dir", dest="out_dir",
                        help="where the leaderboard and plots go (default: <db dir>/<db name>-reports/casegen)")
    parser.add_argument("--allow-same-family", dest="allow_same_family", action="store_true",
                        help="let a judge of the judged model's family judge")
    parser.add_argument("--skip-judge", dest="skip_judge", action="store_true", help="reference metrics only, no judge")
    parser.add_argument("--no-plots", dest="plots", action="store_false", help="leaderboard files only, no PNG plots")


def aquaechr_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--system", required=True,
                        choices=("closed-book", "rtg-vanilla", "rtg-llatrieval", "posthoc-vanilla", "posthoc-rarr"))
    parser.add_argument("--model", help="the evaluated model (default: the settings file's)")
    parser.add_argument("--llm", help="LLM backend: replay, openai, llamacpp, vllm (default: the settings file's)")
    parser.add_argument("--replay-file", dest="replay_file", help="replay backend: JSONL of recorded answers")
    parser.add_argument("--items", dest="items_file",
                        help="expert-annotation JSON file to evaluate on (default: curated.aquaechr_qa kept rows)")
    parser.add_argument("--names", dest="names_file",
                        help="case id → name JSON (default: caseid_to_name.json next to --items)")
    parser.add_argument("--nli", default="llm", help="NLI judge: 'llm' (default) or 'cross-encoder:<local path>'")
    parser.add_argument("--nli-model", dest="nli_model",
                        help="--nli llm: judge model (default: the settings' nli role, else --model)")
    parser.add_argument("--k", type=int, default=5, help="passages shown to the model (default 5)")
    parser.add_argument("--retriever", default="bm25", choices=RETRIEVERS)
    parser.add_argument("--max-rounds", dest="max_rounds", type=int, default=2,
                        help="rtg-llatrieval: sufficiency-check rounds")
    parser.add_argument("--limit", type=int, help="only the first N items")
    parser.add_argument("--bertscore-model", dest="bertscore_model",
                        help="local transformers model folder for BERTScore (default: all-MiniLM-L6-v2 package)")
    parser.add_argument("--no-bertscore", dest="no_bertscore", action="store_true",
                        help="skip BERTScore (recorded as skipped)")
    parser.add_argument("--index-dir", dest="index_dir", help="persist retriever indexes under this folder")
    parser.add_argument("--dense-model", dest="dense_model", help="sentence-transformers folder for the dense retriever")
    parser.add_argument("--out-dir", dest="out_dir",
                        help="where the report (markdown) and CSV go (default: <db dir>/<db name>-reports/aquaechr)")
    parser.add_argument("--format", choices=("text", "json"), default="text")


def aquaechr_filter_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gold", required=True,
                        help="CSV: question,answer,comprehensiveness,conciseness,answer_fluency")
    parser.add_argument("--llm", help="LLM backend: replay, openai, llamacpp, vllm (default: the settings file's)")
    parser.add_argument("--model", "--judge-model", dest="model", help="the judge model (default: the settings file's)")
    parser.add_argument("--replay-file", dest="replay_file", help="replay backend: JSONL of recorded answers")
    parser.add_argument("--low-quality-at", dest="low_quality_at", type=int, default=3,
                        help="a score at or below this is low quality (default 3)")
    parser.add_argument("--convention", choices=("paper", "caseforge"), default="paper",
                        help="positive class of the F1: 'paper' (default) high quality, as the paper counts; "
                             "'caseforge' low quality. Each F1 is printed next to an always-'high' judge's")


OPTIONS = {"casefacts": casefacts_options, "case": case_options, "casegen": casegen_options,
           "aquaechr": aquaechr_options, "aquaechr-filter": aquaechr_filter_options}


def register(sub: argparse._SubParsersAction) -> None:
    add_entry_subcommands(sub, "eval", "evaluate systems on a benchmark; results in eval.*", "evaluation", "BENCHMARK",
                          registry.EVALUATIONS, OPTIONS, run, add_db_option, add_llm_cache_options)


# notes that say how a whole CaseFacts result was made, printed as a header above its numbers
HEADER_NOTES = {"casefacts": (("n", "gold rule"), ("corpus_docs", "corpus"), ("recall@1", "retriever"))}


def print_metrics(metrics: dict, notes: dict, fmt: str, keys: tuple[str, ...] = KEY_METRICS,
                  evaluation: str | None = None) -> None:
    if fmt == "json":
        print(json.dumps(metrics, indent=1, sort_keys=True))
        return
    headers = HEADER_NOTES.get(evaluation, ())
    for name, label in headers:
        if name in notes:
            print(f"{label}: {notes[name]}")
    shown = {name for name, _ in headers}
    for name in keys:
        if name in metrics:
            value = metrics[name]
            text = ("n/a" if value is None else f"{value:.4f}" if isinstance(value, float) and not value.is_integer()
                    else f"{value:g}")
            note = notes.get(name) if name not in shown else None
            print(f"{name:>24}  {text}" + (f"  ({note})" if note else ""))


def run(args: argparse.Namespace) -> int:
    from caseforge import evalstore
    from caseforge.settings import load_settings
    from caseforge.warehouse.query import open_for_query

    if args.evaluation == "casegen":     # a refused judge is a usage error, not a failed run
        from caseforge.tasks.casegen.eval.pipeline import make_params

        make_params(args.models, args.llm, args.judge_model, allow_same_family=args.allow_same_family,
                    skip_judge=args.skip_judge)
    fmt = getattr(args, "format", "text")
    flow = registry.EVALUATIONS[args.evaluation].flow()
    report = run_flow(flow, summary_to=notes_out(fmt), **flow_arguments(flow, args))
    if args.evaluation == "aquaechr-filter":
        print("\n".join(report["results"].get("lines", [])))
    # the runs the flow stored, by the ids it returned (never recomputed here): one run, or one per model
    run_id = report["results"].get("eval_run_id") if args.evaluation != "aquaechr-filter" else None
    per_model = report["results"].get("eval_run_ids") or {}
    if run_id or per_model:
        settings = load_settings(args.db)
        con, _ = open_for_query(settings.db_path, settings.parquet_dir)
        try:
            if run_id:
                print_metrics(evalstore.load_metrics(con, run_id), evalstore.load_notes(con, run_id), fmt,
                              evaluation=args.evaluation)
            for model, model_run_id in per_model.items():
                print(f"{model} (evaluation run {model_run_id})")
                print_metrics(evalstore.load_metrics(con, model_run_id), evalstore.load_notes(con, model_run_id),
                              "text", CASEGEN_KEY_METRICS)
        finally:
            con.close()
    return finish(report)
