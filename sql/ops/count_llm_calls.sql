SELECT count(*) FROM ops.llm_calls;
