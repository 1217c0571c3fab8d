INSERT OR REPLACE INTO eval.casegen_generations
VALUES ($item_id, $model, $backend, $task, $request_identity, $input_cut, $input_chars, $input_chars_kept,
        $output_text, $status, $error, $run_id, now());
