INSERT INTO eval.aquaechr_outputs (run_id, item_id, question, answer, shown, citations, sentences, gold_citations,
                                   scores, status, reason)
VALUES ($run_id, $item_id, $question, $answer, $shown, $citations, $sentences, $gold_citations, $scores, $status,
        $reason);
