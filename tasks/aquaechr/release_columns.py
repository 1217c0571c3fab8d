"""What each column of the aquaechr release means (the dataset card's column table and croissant.json read it;
the release writer refuses a column that has no entry here), and the type of the column the release builds from
JSON (the warehouse types the others)."""
import pyarrow as pa

COLUMNS: dict[str, str] = {
    "qa_id": "identifier of the question–answer pair",
    "guide_id": "the ECHR case-law guide the pair was built from",
    "strategy": "question strategy: i (one paragraph), ii (paragraphs), iii (sentences), iv-a/iv-b/iv-c (search)",
    "question": "the question, written by the generator model",
    "answer": "guide sentences copied word for word that answer the question",
    "citations": "per answer sentence: the guide paragraph it comes from and its citations resolved to HUDOC "
                 "judgments (itemid, pinpoint paragraphs, their text when the warehouse holds it)",
    "comprehensiveness": "the judge's score, 1 to 5: does the answer cover the whole question",
    "conciseness": "the judge's score, 1 to 5: does the answer stay on the question",
    "fluency": "the judge's score, 1 to 5: does the answer read as one coherent text",
    "n_answer_sentences": "number of sentences in the answer",
    "n_cited_paragraphs": "number of distinct judgment paragraphs the answer cites",
    "source_date": "version date of the guide the answer is copied from (the date the fresh split is cut on)",
    "newest_cited_judgment_date": "newest judgment date among the cited judgments the warehouse holds (empty "
                                  "when it holds none of them)",
    "source_payload_sha256": "sha256 of the archived guide payloads the pair was built from",
    "model": "the model that wrote the question (latest successful call)",
    "prompt_sha256": "sha256 of the question prompt template of that call",
    "judge_model": "the model that scored the pair",
    "judge_prompt_sha256": "sha256 of the judge's prompt template",
}

# citations: caseforge.tasks.aquaechr.attribution.sentence_records
_CITATION = pa.struct([
    ("case_name", pa.string()), ("year", pa.int64()), ("itemid", pa.string()), ("pinpoints", pa.list_(pa.string())),
    ("language", pa.string()),
    ("passages", pa.list_(pa.struct([("para_no", pa.string()), ("text", pa.string())]))),
])
TYPES: dict[str, pa.DataType] = {
    "citations": pa.list_(pa.struct([("sentence", pa.string()), ("guide_para_no", pa.string()),
                                     ("citations", pa.list_(_CITATION))])),
}
