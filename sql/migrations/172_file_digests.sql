-- Digests of replayed files (issue 43): a folder replayed night after night (--from-dir, --from-samples) is read and
-- hashed only where a file is new or changed. A file's sha256 is taken from here while its path, device, inode,
-- size, modification and change times are what they were when it was hashed (caseforge/file_digests.py); the
-- change time moves with every write and no program can set it. No index: rows of a path are replaced by a
-- delete and an insert (as on the other tables every run appends to, migration 130).
CREATE TABLE IF NOT EXISTS ops.file_digests (
    source      VARCHAR NOT NULL,
    path        VARCHAR NOT NULL,
    device      BIGINT NOT NULL,
    inode       BIGINT NOT NULL,
    size        BIGINT NOT NULL,
    mtime_ns    BIGINT NOT NULL,
    ctime_ns    BIGINT NOT NULL,
    sha256      VARCHAR NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL
);
