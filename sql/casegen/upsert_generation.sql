INSERT OR REPLACE INTO eval.casegen_generations
VALUES ($item_id, $model, $backend, $task, $request_identity, $input_cut, $input_unit, $input_length, $input_length_kept,
        $output_text, $status, $error, $run_id, now());
