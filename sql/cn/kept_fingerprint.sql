-- The documents one filter configuration keeps, as a count and an order-independent hash of (doc_id, the
-- judgment row decided on): a selection over the same kept documents is not computed again.
SELECT count(*) AS rows, coalesce(sum(hash(doc_id, judgment_updated_at)::HUGEINT), 0)::VARCHAR AS hash
FROM curated.cn_filter_decisions
WHERE filter_config = $filter_config AND kept;
