-- Batch upsert of generations from the registered relation _rows.
INSERT OR REPLACE INTO eval.casegen_generations
SELECT item_id, model, backend, task, request_identity, input_cut, input_unit, input_length, input_length_kept,
       output_text, status, error, run_id, now()
FROM _rows;
