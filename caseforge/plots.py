"""Generic PNG plots for run artifacts and dataset cards (matplotlib, no display needed)."""
from __future__ import annotations

import base64
import io
from typing import Iterable, Sequence


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt, plt.subplots(figsize=(7, 3.6), dpi=100)


def _png(plt, fig) -> bytes:
    buffer = io.BytesIO()
    fig.tight_layout()
    # no Software/date metadata: the same data gives the same bytes
    fig.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def bar_chart(counts: dict[str, int] | Sequence[tuple[str, int]], title: str, xlabel: str = "",
              ylabel: str = "count") -> bytes:
    """A bar per category, in the order given (a dict keeps its insertion order)."""
    items = list(counts.items()) if isinstance(counts, dict) else list(counts)
    plt, (fig, ax) = _figure()
    labels = [str(k) for k, _ in items]
    values = [v for _, v in items]
    ax.bar(range(len(values)), values, color="#3b6ea5")
    ax.set_xticks(range(len(labels)), labels, rotation=45 if len(labels) > 8 else 0, ha="right" if len(labels) > 8 else "center")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    for i, v in enumerate(values):
        ax.annotate(str(v), (i, v), ha="center", va="bottom", fontsize=8)
    return _png(plt, fig)


def histogram(values: Iterable[float], title: str, bins: int = 30, window: tuple[float | None, float | None] | None = None,
              xlabel: str = "", ylabel: str = "count") -> bytes:
    """A histogram; `window` = (low, high) draws dashed lines where an accepted range starts and ends."""
    data = [float(v) for v in values if v is not None]
    plt, (fig, ax) = _figure()
    ax.hist(data, bins=bins, color="#5a9e6f")
    if window:
        for bound, label in zip(window, ("low", "high")):
            if bound is not None:
                ax.axvline(bound, color="#b03a2e", linestyle="--", linewidth=1.2, label=f"window {label}: {bound:g}")
        ax.legend(fontsize=8)
    ax.set_title(f"{title} (n={len(data)})")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return _png(plt, fig)


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def histogram_panels(panels: Sequence[tuple[str, Sequence[float], tuple[float | None, float | None] | None]],
                     title: str, bins: int = 30, xlabel: str = "", ylabel: str = "count") -> bytes:
    """One histogram per (panel title, values, window) side by side, on one x range; a window's bounds are
    dashed lines (the calibrated range a stage accepts)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(panels) or [("", [], None)]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels) + 0.6, 3.6), dpi=100, squeeze=False)
    everything = [float(v) for _, values, _ in panels for v in values if v is not None]
    everything += [float(b) for _, _, window in panels for b in (window or ()) if b is not None]
    span = (min(everything), max(everything)) if everything else (0.0, 1.0)
    if span[0] == span[1]:
        span = (span[0] - 0.5, span[1] + 0.5)
    for ax, (name, values, window) in zip(axes[0], panels):
        data = [float(v) for v in values if v is not None]
        ax.hist(data, bins=bins, range=span, color="#5a9e6f")
        if window:
            for bound, label in zip(window, ("low", "high")):
                if bound is not None:
                    ax.axvline(bound, color="#b03a2e", linestyle="--", linewidth=1.2,
                               label=f"window {label}: {bound:.3f}")
            ax.legend(fontsize=7)
        ax.set_title(f"{name} (n={len(data)})", fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
    fig.suptitle(title, fontsize=10)
    return _png(plt, fig)


def box_plot(groups: dict[str, Sequence[float]], title: str, ylabel: str = "", xlabel: str = "") -> bytes:
    """A box per group (in the order given), its size under the name: lengths by label, say."""
    plt, (fig, ax) = _figure()
    names = list(groups)
    data = [[float(v) for v in groups[n] if v is not None] for n in names]
    ax.boxplot([d or [0.0] for d in data], showfliers=True)
    ax.set_xticks(range(1, len(names) + 1), [f"{n}\n(n={len(d)})" for n, d in zip(names, data)])
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return _png(plt, fig)


def grouped_bars(series: dict[str, dict[str, int]], categories: Sequence[str], title: str, xlabel: str = "",
                 ylabel: str = "count") -> bytes:
    """Bars per category, one colour per series (judge scores 1..10 per dimension, say)."""
    plt, (fig, ax) = _figure()
    names = list(series)
    width = 0.8 / max(len(names), 1)
    for i, name in enumerate(names):
        xs = [c + (i - (len(names) - 1) / 2) * width for c in range(len(categories))]
        ax.bar(xs, [series[name].get(str(c), 0) for c in categories], width=width, label=name)
    ax.set_xticks(range(len(categories)), [str(c) for c in categories])
    if len(names) > 1:
        ax.legend(fontsize=8)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return _png(plt, fig)


def confusion_matrices(panels: Sequence[tuple[str, Sequence[str], Sequence[Sequence[int]]]], title: str,
                       ylabel: str = "judge", xlabel: str = "people") -> bytes:
    """One confusion matrix per (panel title, categories, counts) side by side: rows `ylabel`, columns `xlabel`,
    each cell's count written in it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(panels) or [("", [], [])]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.9 * len(panels) + 0.6, 4.0), dpi=100, squeeze=False)
    for ax, (name, categories, counts) in zip(axes[0], panels):
        size = len(categories)
        grid = [[int(v) for v in row] for row in counts] if counts else [[0] * size for _ in range(size)]
        ax.imshow(grid or [[0]], cmap="Blues", vmin=0)
        ax.set_xticks(range(size), [str(c) for c in categories], rotation=45 if size > 4 else 0, ha="right" if size > 4 else "center", fontsize=8)
        ax.set_yticks(range(size), [str(c) for c in categories], fontsize=8)
        top = max((v for row in grid for v in row), default=0)
        for i, row in enumerate(grid):
            for j, value in enumerate(row):
                ax.text(j, i, str(value), ha="center", va="center", fontsize=8,
                        color="white" if top and value > top / 2 else "black")
        ax.set_title(f"{name} (n={sum(map(sum, grid))})", fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
    fig.suptitle(title, fontsize=10)
    return _png(plt, fig)
