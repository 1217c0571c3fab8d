-- One human score (item, model, score 1-10).
INSERT INTO _human (item_id, model, score) VALUES (?, ?, ?);
