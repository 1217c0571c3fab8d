-- The human scores of one agreement run, in a temporary table human_pairs.sql joins.
CREATE OR REPLACE TEMP TABLE _human (item_id VARCHAR, model VARCHAR, score DOUBLE);
