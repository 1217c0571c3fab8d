INSERT OR REPLACE INTO eval.casegen_judgements
VALUES ($item_id, $model, $judge_model, $task, $dimension, $score, $status, $reason, $reply_format,
        $request_identity, $run_id, now());
