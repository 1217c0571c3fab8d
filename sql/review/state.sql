-- What a release's judge card depends on: the benchmark's accepted annotations and its pushed items.
SELECT (SELECT count(*) FROM review.items WHERE benchmark = $benchmark) AS items,
       (SELECT md5(coalesce(string_agg(item_id || '|' || annotation_id || '|' || field || '|' || value, ','
                                       ORDER BY annotation_id, field), ''))
        FROM review.annotations WHERE benchmark = $benchmark) AS annotations;
