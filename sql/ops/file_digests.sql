-- The digests recorded for one source's replayed files (caseforge/file_digests.py).
SELECT path, device, inode, size, mtime_ns, ctime_ns, sha256 FROM ops.file_digests WHERE source = ?;
