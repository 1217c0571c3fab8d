"""caseforge/atomic.py: a new file replaces the old one whole, or, with keep_existing, never replaces one."""
from __future__ import annotations

import pytest

from caseforge.atomic import renamed_into_place, write_atomically


def test_a_write_replaces_the_old_content_and_leaves_no_staging_file(tmp_path):
    target = tmp_path / "a.json"
    target.write_text("old")
    write_atomically(target, "new")
    assert target.read_text() == "new" and [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_failed_write_leaves_the_old_content_and_no_staging_file(tmp_path):
    target = tmp_path / "a.json"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with renamed_into_place(target) as partial:
            partial.write_text("half")
            raise RuntimeError("stopped")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_keep_existing_puts_a_new_file_in_place_but_never_over_one_made_meanwhile(tmp_path):
    target = tmp_path / "cf.duckdb"
    with renamed_into_place(target, keep_existing=True) as partial:
        partial.write_text("first")
    assert target.read_text() == "first"
    with renamed_into_place(target, keep_existing=True) as partial:
        partial.write_text("second")
    assert target.read_text() == "first" and [p.name for p in tmp_path.iterdir()] == ["cf.duckdb"]
