"""What each column of the casegen release means (the dataset card's column table and croissant.json read it;
the release writer refuses a column that has no entry here), and the type of the column the release builds from
JSON (the warehouse types the others)."""
import pyarrow as pa

COLUMNS: dict[str, str] = {
    "item_id": "identifier of the drafting item",
    "task": "the section to draft: defense, facts, reasoning or judgment",
    "doc_id": "the judgment the item was cut from",
    "source": "cn_judgments (curated.cn_judgments) or the name of the CaseGen-format file it was read from",
    "inputs": "the gold sections given to the drafter (evidence as a list of name, content, event)",
    "reference": "the gold section the drafter is asked to write",
    "evidence_count": "number of evidence entries in the inputs",
    "evidence_with_content": "number of evidence entries that carry their content",
    "court": "the court that gave the judgment",
    "judgment_date": "date of the judgment (the date the fresh split is cut on; empty for file items)",
    "case_year": "year of the case number",
    "content_sha256": "sha256 of the item's inputs and reference",
    "source_payload_sha256": "sha256 of the archived payload (dump file or API answer) the judgment was parsed from",
}

# inputs holds the sections of the item's task (caseforge.tasks.casegen.items.TASK_INPUTS); the others are null
TYPES: dict[str, pa.DataType] = {
    "inputs": pa.struct([
        ("claims", pa.string()), ("defense", pa.string()),
        ("evidence", pa.list_(pa.struct([("name", pa.string()), ("content", pa.string()), ("event", pa.string())]))),
        ("facts", pa.string()), ("reasoning", pa.string()),
    ]),
}
