DELETE FROM eval.aquaechr_metrics WHERE run_id = $run_id;
