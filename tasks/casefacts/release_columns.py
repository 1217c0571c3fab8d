"""What each column of the casefacts release means (the dataset card's column table and croissant.json read it;
the release writer refuses a column that has no entry here)."""

COLUMNS: dict[str, str] = {
    "claim_id": "identifier of the claim; a REFUTED claim is its SUPPORTED claim's id followed by ~neg",
    "fact_id": "the legal fact the claim states; claims of one fact stay in one split",
    "claim": "the claim, in plain everyday language",
    "label": "SUPPORTED, REFUTED or OVERRULED against the evidence cases",
    "split": "train or test (the fresh split repeats rows of both and keeps this column)",
    "evidence_case_ids": "Oyez ids of the cases that decide the claim (for OVERRULED also the overruling cases)",
    "overruling_case_ids": "Oyez ids of the later cases that overruled the claim's case (empty unless OVERRULED)",
    "evidence_case_names": "names of the evidence cases, in name order",
    "overruling_case_names": "names of the overruling cases, in name order",
    "source_date": "newest decision date among the evidence cases (the date the fresh split is cut on)",
    "source_payload_sha256": "sha256 of the archived Oyez payload of each evidence case, in case id order",
    "claim_stage": "the build step that wrote the claim's text: generate, same_case_resolution, overlap_merge or "
                   "rewrite",
    "model": "the model of that step in the latest build",
    "prompt_sha256": "sha256 of that step's prompt template in the latest build",
}
