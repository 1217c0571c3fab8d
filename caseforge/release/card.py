"""The dataset card: README.md with Hugging Face front matter, splits, columns and their meanings, the fresh split,
intended use and limitations, how the release was built, source licences, citation and version."""
from __future__ import annotations

import json

from caseforge.release.content import ReleaseContent
from caseforge.release.harness import INSPECT_TASK, LM_EVAL, items_per_year
from caseforge.release.layout import CROISSANT, FRESH, MANIFEST
from caseforge.release.licences import LICENCES, licence_id


def card_rows(con, statement: str, params=None) -> list[dict]:
    """The rows of one statement under sql/ as dicts (for the card: stages, quality results, windows)."""
    from caseforge.warehouse.statements import run_sql

    cursor = run_sql(con, statement, params)
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def release_rows(con, statement: str, params=None):
    """The rows of one statement under sql/ as a frame, with the warehouse's type of each column as Arrow gives it
    (a DATE stays a date and an INTEGER an integer even where every row is NULL): (frame, column -> Arrow type)."""
    from caseforge.warehouse.statements import run_sql

    table = run_sql(con, statement, params).to_arrow_table()
    return table.to_pandas(integer_object_nulls=True), dict(zip(table.schema.names, table.schema.types))


def md_table(headers: list[str], rows: list[list]) -> str:
    def cell(value) -> str:
        text = "" if value is None else str(value)
        return text.replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def render_card(dataset: str, release: ReleaseContent) -> str:
    """The dataset card as Markdown with Hugging Face front matter.

    `release.card` keys (all optional unless said): title, description, licence (the LICENCES entry whose terms
    the release carries; required for the front matter's licence), language [codes], task_categories, tags,
    sources (names of LICENCES), distributions {name: {value: count}}, distribution_notes {name: what its values
    mean (every value that is not self-explanatory)}, quality [rows], stages [{stage, model,
    template_id, template_sha}], llm_cost [caseforge.llm.cache.release_cost rows: what the answers behind the
    stages cost], build (how it was built, Markdown), intended_use, limitations, citation
    (BibTeX of the method the release follows), notes."""
    card = release.card
    parts = ["---", *front_matter(dataset, release), "---", "", f"# {card.get('title', dataset)}", ""]
    if card.get("description"):
        parts += [card["description"].strip(), ""]
    parts += [f"Version `{release.version}`; data date {release.data_date or 'unknown (no dated row)'} (the newest "
              "source-document date in the release, not the day it was written).", ""]
    parts += ["## Splits", "", md_table(
        ["split", "rows", "file"],
        [[name, release.tables[name].num_rows, f"data/{name}.parquet"] for name in release.split_names()]), ""]
    parts += ["## Columns", ""]
    for names, schema in release.schema_groups():
        parts += [f"Split{'s' if len(names) > 1 else ''} {', '.join(names)}:", "", md_table(
            ["column", "type", "meaning"],
            [[field.name, str(field.type), release.columns[field.name]] for field in schema]), ""]
    parts += ["## Fresh split", "", release.fresh.describe(release.date_column, release.tables[FRESH].num_rows), ""]
    parts += harness_section(dataset, release)
    if card.get("intended_use") or card.get("limitations"):
        parts += ["## Intended use and limitations", ""]
        if card.get("intended_use"):
            parts += [card["intended_use"].strip(), ""]
        if card.get("limitations"):
            parts += [card["limitations"].strip(), ""]
    parts += ["## How it was built", ""]
    if card.get("build"):
        parts += [card["build"].strip(), ""]
    if card.get("stages"):
        keys = ["stage", "model", "template_id", "template_sha"]
        rows = [[s.get(k) for k in keys] for s in sorted(card["stages"], key=lambda s: json.dumps(s, sort_keys=True))]
        parts += ["### Models and prompts per stage", "", md_table(keys, rows), ""]
    parts += cost_section(card.get("llm_cost"), release.main_rows())
    if card.get("quality"):
        keys = ["table_name", "suite", "success", "rows_checked", "rows_failed", "batch_rejected", "batches"]
        rows = [[q.get(k) for k in keys] for q in sorted(card["quality"], key=lambda q: str(q.get("table_name")))]
        parts += ["### Quality gate (per table, over all batches of its current data)", "", md_table(keys, rows), ""]
    for name, distribution in sorted(card.get("distributions", {}).items()):
        total = sum(distribution.values()) or 1
        rows = [[k, v, f"{100 * v / total:.1f}%"] for k, v in sorted(distribution.items(), key=lambda kv: (-kv[1], str(kv[0])))]
        parts += [f"### Distribution: {name}", ""]
        if card.get("distribution_notes", {}).get(name):
            parts += [card["distribution_notes"][name].strip(), ""]
        parts += [md_table(["value", "count", "share"], rows), ""]
    if release.judge is not None:
        parts += [release.judge.markdown("##"), ""]
    parts += ["### Provenance", ""]
    if release.payload_digest:
        parts += [f"{release.payload_count} upstream payloads are listed with their sha256 in "
                  f"`provenance/source_payloads.tsv`; sha256 of that list: `{release.payload_digest}`.", ""]
    else:
        parts += ["No upstream payload list was given for this release.", ""]
    if card.get("notes"):
        parts += ["### Notes", "", card["notes"].strip(), ""]
    sources = sorted(card.get("sources", []))
    if sources:
        rows = [[s, LICENCES.get(s, "UNKNOWN: add it to caseforge.release.LICENCES")] for s in sources]
        parts += ["## Licences of the sources", "", md_table(["source", "licence"], rows), ""]
    if card.get("citation"):
        parts += ["## Citation", "", "The method this release follows:", "", "```bibtex", card["citation"].strip(),
                  "```", ""]
    parts += ["## Version and date", "",
              f"Version `{release.version}`: the data date, then the first 12 hex digits of the sha256 of the rows "
              f"(`{release.data_digest}`), so the same rows always carry the same version. Data date: "
              f"{release.data_date or 'unknown'}.", "",
              f"`{CROISSANT}` holds the Croissant 1.1 metadata; every file's sha256 is in `{MANIFEST}`.", ""]
    return "\n".join(parts)


COST_KEYS = ["stage", "model", "served_model", "calls", "prompt_tokens", "completion_tokens", "model_s"]


def cost_section(costs: list[dict] | None, items: int) -> list[str]:
    """"What it cost to make": the cached LLM answers behind the release's stages (caseforge.llm.cache.release_cost)
    with the models that served them, as recorded, and the cost per released item. None: the release names no LLM
    stage."""
    if costs is None:
        return []
    lines = ["### What it cost to make", ""]
    if not costs:
        return lines + ["No LLM answer of its stages is in the cache that built it.", ""]
    rows = [[c["stage"], c["model"], c["served_model"], c["calls"], c["prompt_tokens"], c["completion_tokens"],
             f"{c['model_ms'] / 1000:.1f}"] for c in costs]
    calls, prompt, completion, model_ms = (sum(c[k] for c in costs) for k in ("calls", "prompt_tokens",
                                                                               "completion_tokens", "model_ms"))
    lines += ["Every answer of the models and prompts above that the cache holds, as it was made (those behind items "
              "the checks removed too: what the kept ones cost to make); a request answered from the cache was paid "
              "for once. `served_model` is the model that answered, as the endpoint or engine said; `not recorded`: "
              "answered before caseforge recorded it. `model_s`: the seconds from sending each request to its whole "
              "answer, summed.", "", md_table(COST_KEYS, rows), ""]
    per_item = (f": per released item ({items:,}), {(prompt + completion) / items:,.0f} tokens and "
                f"{model_ms / 1000 / items:,.2f} model-seconds") if items else ""
    return lines + [f"Altogether {calls:,} calls, {prompt:,} prompt and {completion:,} completion tokens, "
                    f"{model_ms / 1000:,.1f} model-seconds{per_item}.", ""]


def _yaml(value) -> str:
    """A YAML scalar: JSON strings are YAML strings, whatever characters they hold."""
    return json.dumps(value, ensure_ascii=False)


def size_category(rows: int) -> str:
    """The Hugging Face size bucket of a row count."""
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                        (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")):
        if rows < limit:
            return name
    return "n>1T" if rows > 1_000_000_000_000 else "1B<n<10B"


def front_matter(dataset: str, release: ReleaseContent) -> list[str]:
    card = release.card
    lines = [f"license: {licence_id(card)}", "language:"]
    lines += [f"- {code}" for code in card.get("language", ["en"])]
    lines += ["task_categories:"] + [f"- {t}" for t in card.get("task_categories", ["other"])]
    lines += ["size_categories:", f"- {size_category(release.main_rows())}"]
    lines += [f"pretty_name: {_yaml(card.get('title', dataset))}"]
    if card.get("tags"):
        lines += ["tags:"] + [f"- {_yaml(t)}" for t in card["tags"]]
    lines += ["configs:", "- config_name: default", "  data_files:"]
    for name in release.split_names():
        lines += [f"  - split: {name}", f"    path: data/{name}.parquet"]
    return lines


def harness_section(dataset: str, release: ReleaseContent) -> list[str]:
    """The card's section on evaluating a model with the release's harness tasks (none without a harness)."""
    spec = release.harness
    if spec is None:
        return []
    options = "\n".join(f"- `{name}`: {meaning}" for name, meaning in spec.options.items())
    return [
        "## Evaluate a model with inspect_ai or lm-evaluation-harness", "",
        "`harness/` holds an inspect_ai task and an lm-evaluation-harness task of this release. They read its "
        "Parquet files by relative path, refuse to score when `release.json` is not the version they were written "
        "for or any file's sha256 differs from `MANIFEST.sha256`, and score as `caseforge eval` does. They need the "
        "harness and pyarrow (and nltk for AQuAECHR's ROUGE-L), not caseforge. Against any OpenAI-compatible server "
        "(vLLM, llama.cpp's server) at `http://HOST:PORT/v1`, from the release's folder:", "",
        "```bash",
        "LOCAL_API_KEY=x LOCAL_BASE_URL=http://HOST:PORT/v1 "
        f"inspect eval {INSPECT_TASK} --model openai-api/local/MODEL",
        f"lm-eval run --include_path {LM_EVAL} --tasks caseforge_{dataset} --model local-chat-completions "
        "--model_args base_url=http://HOST:PORT/v1/chat/completions,model=MODEL,tokenizer_backend=None "
        "--apply_chat_template --output_path lm_eval_out --log_samples",
        "```", "",
        spec.notes.strip(), "",
        "Options (inspect: `-T name=value`; lm-eval: `--metadata '{\"name\": \"value\"}'`):", "", options, "",
        "### Items per year", "",
        "Items by the year of their source document; `after=YYYY-MM-DD` scores only the items decided after that "
        "day, so a cut-off past a model's training data leaves the items it cannot have seen.", "",
        md_table(["split", "year", "items"], [list(row) for row in items_per_year(release)]), "",
    ]
