-- Per part of a table mirrored in parts (part i holds the rows whose stamp, in epoch µs, lies in
-- ($lowers[i], $uppers[i]]), its rows, newest stamp and an order-independent hash of (stamp, key): only these
-- narrow columns are read. A part whose rows or hash differ from what the mirror recorded is written again.
WITH parts AS (
    SELECT unnest($lowers::BIGINT[]) AS _lower, unnest($uppers::BIGINT[]) AS _upper,
           generate_subscripts($uppers::BIGINT[], 1) - 1 AS _part
)
SELECT p._part AS part, count(*) AS rows, max(t._stamp) AS newest,
       coalesce(sum(t._hash::HUGEINT), 0)::VARCHAR AS hash
FROM (SELECT coalesce(epoch_us({stamp}), -1) AS _stamp, hash({stamp}, {key}) AS _hash FROM {table}) t
JOIN parts p ON t._stamp > p._lower AND t._stamp <= p._upper
GROUP BY p._part;
