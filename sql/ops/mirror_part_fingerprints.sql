-- Per part of a table mirrored in parts (_mirror_parts: _part, _lower, _upper in epoch µs), its rows, newest
-- stamp and an order-independent hash of (stamp, key): only these narrow columns are read. A part whose
-- rows or hash differ from what the mirror recorded is written again; the others are kept as they are.
SELECT p._part AS part, count(*) AS rows, max(t._stamp) AS newest,
       coalesce(sum(t._hash::HUGEINT), 0)::VARCHAR AS hash
FROM (SELECT coalesce(epoch_us({stamp}), -1) AS _stamp, hash({stamp}, {key}) AS _hash FROM {table}) t
JOIN _mirror_parts p ON t._stamp > p._lower AND t._stamp <= p._upper
GROUP BY p._part;
