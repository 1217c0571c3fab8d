"""The generic plot helpers give real PNGs, the same bytes for the same data."""
from caseforge.plots import bar_chart, data_uri, histogram

PNG = b"\x89PNG\r\n\x1a\n"


def test_bar_chart_is_a_png_and_deterministic():
    counts = {"1950s": 3, "1960s": 10, "1970s": 7}
    first = bar_chart(counts, "cases per decade", "decade")
    assert first.startswith(PNG) and len(first) > 2000
    assert bar_chart(counts, "cases per decade", "decade") == first
    assert bar_chart({**counts, "1980s": 1}, "cases per decade", "decade") != first


def test_histogram_with_window_lines_differs_from_one_without():
    values = [1, 2, 2, 3, 3, 3, 4, 4, 5, 50]
    plain = histogram(values, "claim length", bins=10)
    windowed = histogram(values, "claim length", bins=10, window=(2, 40))
    assert plain.startswith(PNG) and windowed.startswith(PNG) and plain != windowed
    assert data_uri(plain).startswith("data:image/png;base64,iVBORw0KGgo")
