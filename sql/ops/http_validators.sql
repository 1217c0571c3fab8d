-- The conditional-GET validators last seen for a URL.
SELECT etag, last_modified FROM ops.http_validators WHERE url = ?;
