-- Before a refresh stores new answers (llm/store_calls.sql with $refresh): the answers they replace, kept.
-- An outage replaces nothing, so nothing is kept for it; an answer already kept is not kept twice.
-- Columns by name: migration 160 added served_model and run_id after replaced_at in the history's order.
INSERT INTO ops.llm_call_history BY NAME
SELECT c.*, now() AS replaced_at
FROM ops.llm_calls c
WHERE c.status <> 'unanswered'
  AND c.identity IN (SELECT identity FROM llm_call_rows WHERE status <> 'unanswered')
  AND NOT EXISTS (SELECT 1 FROM ops.llm_call_history h
                  WHERE h.identity = c.identity AND h.created_at = c.created_at);
