-- The tables the quality gate has results for (with the gated tables' suites: what `caseforge quality TABLE` knows).
SELECT DISTINCT table_name FROM ops.quality_results ORDER BY table_name;
