-- Rows of curated.{table} that a re-parse makes again (a new parser version, --reparse): every unit ({unit}: one
-- case, a judgment's paragraphs, a guide's paragraphs) staged from a payload whose rows are already there is
-- deleted, so the curate statement that follows writes the batch's rows as this parse made them.
DELETE FROM curated.{table}
WHERE ({unit}) IN (SELECT ({unit}) FROM staging.{table}
                   WHERE raw_sha256 IN (SELECT raw_sha256 FROM curated.{table}));
