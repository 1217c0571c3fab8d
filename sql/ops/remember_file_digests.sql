-- Files hashed by this run (_rows: source, path, device, inode, size, mtime_ns, ctime_ns, sha256, recorded_at): each
-- path's earlier row replaced, in one statement pair.
DELETE FROM ops.file_digests AS d
WHERE EXISTS (SELECT 1 FROM _rows r WHERE r.source = d.source AND r.path = d.path);
INSERT INTO ops.file_digests SELECT source, path, device, inode, size, mtime_ns, ctime_ns, sha256, recorded_at
FROM _rows;
