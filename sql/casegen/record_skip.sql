INSERT OR REPLACE INTO curated.casegen_item_skips VALUES ($source, $doc_id, $task, $reason, $run_id);
