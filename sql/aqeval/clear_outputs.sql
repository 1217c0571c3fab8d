DELETE FROM eval.aquaechr_outputs WHERE run_id = $run_id;
