-- Cached answers for the wanted identities (the registered Arrow table llm_wanted).
SELECT c.identity, c.status, c.parsed, c.response_text, c.error
FROM ops.llm_calls c
JOIN llm_wanted w USING (identity);
