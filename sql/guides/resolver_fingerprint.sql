-- What citation resolution reads (judgment names and years, the French → English table) as counts and
-- order-independent hashes: a guide parsed against other judgments is parsed again.
SELECT (SELECT count(*) || ':' || coalesce(sum(hash(itemid, docname, year(judgment_date)))::HUGEINT, 0)
        FROM curated.echr_judgments WHERE docname IS NOT NULL)
       || '/' ||
       (SELECT count(*) || ':' || coalesce(sum(hash(fre_id, eng_id, eng_docname))::HUGEINT, 0)
        FROM curated.echr_itemid_translations);
