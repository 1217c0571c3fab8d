-- Row count and an order-independent content hash of one table ({table} is a checked identifier).
SELECT count(*) AS rows, coalesce(sum(hash(t)::HUGEINT), 0)::VARCHAR AS content_hash
FROM {table} AS t;
