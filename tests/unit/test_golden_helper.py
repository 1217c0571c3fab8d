"""The golden-file helper (tests/golden/golden.py): a missing compare file is written and fails, a
difference fails with a diff, a slow parse warns, a very slow one fails except under CI."""
from __future__ import annotations

import json
from datetime import date

import pytest
from golden import golden


@pytest.fixture
def golden_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(golden, "GOLDEN_DIR", tmp_path)
    return tmp_path


def _clock(monkeypatch, seconds: float) -> None:
    ticks = iter([100.0, 100.0 + seconds])
    monkeypatch.setattr(golden.time, "perf_counter", lambda: next(ticks))


def test_missing_compare_file_is_written_and_the_test_fails(golden_dir, tmp_path):
    output = {"b": date(2019, 4, 11), "a": ("x", float("nan")), "text": "判决如下"}
    with pytest.raises(pytest.fail.Exception, match="no compare file yet.*must review it"):
        golden.assert_golden("src", "one", lambda _: output, tmp_path)
    written = (golden_dir / "src" / "one.compare.json").read_text(encoding="utf-8")
    assert written == '{\n "b": "2019-04-11",\n "a": [\n  "x",\n  null\n ],\n "text": "判决如下"\n}'
    assert golden.assert_golden("src", "one", lambda _: output, tmp_path) == output     # now it passes


def test_a_difference_fails_with_a_diff_and_the_regenerate_hint(golden_dir, tmp_path):
    golden.write("src", "one", {"para_no": "1", "text": "old"})
    with pytest.raises(pytest.fail.Exception) as failure:
        golden.assert_golden("src", "one", lambda _: {"para_no": "1", "text": "new"}, tmp_path)
    message = str(failure.value)
    assert "regenerate.py src" in message and '- "text": "old"' in message and '+ "text": "new"' in message
    assert json.loads((golden_dir / "src" / "one.compare.json").read_text(encoding="utf-8"))["text"] == "old"


def test_key_order_and_layout_do_not_matter_only_values(golden_dir, tmp_path):
    (golden_dir / "src").mkdir()
    (golden_dir / "src" / "one.compare.json").write_text('{"b": 2, "a": [1]}', encoding="utf-8")
    golden.assert_golden("src", "one", lambda _: {"a": [1], "b": 2}, tmp_path)


def test_write_reports_new_changed_unchanged(golden_dir):
    assert golden.write("src", "one", [1])[1] == "new"
    assert golden.write("src", "one", [1])[1] == "unchanged"
    assert golden.write("src", "one", [2])[1] == "changed"


def test_a_parse_over_one_second_warns(golden_dir, tmp_path, monkeypatch):
    golden.write("src", "one", [1])
    _clock(monkeypatch, 1.5)
    with pytest.warns(golden.SlownessWarning, match="src/one: parsing took 1.50 s"):
        golden.assert_golden("src", "one", lambda _: [1], tmp_path)


def test_a_parse_over_fifteen_seconds_fails_except_under_ci(golden_dir, tmp_path, monkeypatch):
    golden.write("src", "one", [1])
    monkeypatch.delenv("CI", raising=False)
    _clock(monkeypatch, 16.0)
    with pytest.warns(golden.SlownessWarning), pytest.raises(pytest.fail.Exception, match="more than 15 s"):
        golden.assert_golden("src", "one", lambda _: [1], tmp_path)
    monkeypatch.setenv("CI", "true")
    _clock(monkeypatch, 16.0)
    with pytest.warns(golden.SlownessWarning):
        golden.assert_golden("src", "one", lambda _: [1], tmp_path)


def test_output_that_json_cannot_hold_is_refused():
    with pytest.raises(TypeError, match="holds a set"):
        golden.to_json({"a": {1, 2}})
