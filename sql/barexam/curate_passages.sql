INSERT OR REPLACE INTO curated.barexam_passages
SELECT passage_id, source, text, raw_sha256 FROM staging.barexam_passages;
