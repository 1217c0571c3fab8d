INSERT OR REPLACE INTO eval.aquaechr_runs (run_id, system, llm, model, nli, bertscore_model, dataset, dataset_sha,
                                           corpus, params, n_items, n_failed, started_at, finished_at)
VALUES ($run_id, $system, $llm, $model, $nli, $bertscore_model, $dataset, $dataset_sha, $corpus, $params, $n_items,
        $n_failed, $started_at, $finished_at);
