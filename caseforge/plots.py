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
