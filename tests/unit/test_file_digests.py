"""Replayed files are hashed only when new or changed (caseforge/file_digests.py): a recorded digest stands while the
file's stamps (device, inode, size, modification and change time) are as they were; a rewrite, even to the same
size with its modification time put back, or a file replaced by another, is read again; a file changed within the
racy window of its hashing is not recorded."""
from __future__ import annotations

import os

import pytest

from caseforge import file_digests
from caseforge.file_digests import FileDigests
from caseforge.warehouse.connection import connect


@pytest.fixture
def con(db_path):
    con = connect(db_path)
    yield con
    con.close()


def digest_again(con, path) -> tuple[str, int]:
    """A later run's digest of `path` and how many files it read to get it."""
    digests = FileDigests(con, "hudoc")
    sha = digests.sha256(path)
    digests.save()
    return sha, digests.read


def test_an_unchanged_file_is_not_read_again_and_a_changed_one_is(con, tmp_path, monkeypatch):
    monkeypatch.setattr(file_digests, "RACY_S", 0.0)       # the files here were all written a moment ago
    body = tmp_path / "001-1.html"
    body.write_bytes(b"<p>1. The facts.</p>")
    first, read = digest_again(con, body)
    assert read == 1
    assert digest_again(con, body) == (first, 0)          # a later night: not read

    stamps = os.stat(body)
    body.write_bytes(b"<p>1. The FACTS.</p>")              # same size, its modification time put back
    os.utime(body, ns=(stamps.st_atime_ns, stamps.st_mtime_ns))
    changed, read = digest_again(con, body)
    assert read == 1 and changed != first

    other = tmp_path / "other.html"
    other.write_bytes(b"<p>1. The facts.</p>")
    os.replace(other, body)                                # another file under the same name (a new inode)
    assert digest_again(con, body) == (first, 1)

    link = tmp_path / "link.html"
    link.symlink_to(body)
    assert digest_again(con, link) == (first, 1)
    assert digest_again(con, link) == (first, 0)


def test_a_file_written_within_the_racy_window_is_not_recorded(con, tmp_path):
    body = tmp_path / "001-2.html"
    body.write_bytes(b"<p>1. Just written.</p>")
    assert digest_again(con, body)[1] == 1
    assert digest_again(con, body)[1] == 1                 # not trusted yet: read again
