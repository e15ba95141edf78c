"""Best-so-far curves as a PNG: the median per strategy with the min-max band over seeds."""
from __future__ import annotations

from pathlib import Path
from typing import Any


def plot_curves(curves: dict[str, list[list[float]]], path: str | Path, *, target: float | None = None,
                title: str = "") -> Path:
    """Example::

        plot_curves({"guided": [run1_curve, run2_curve], "random": [...]}, "compare.png", target=0.9)
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, runs in curves.items():
        runs = [c for c in runs if c]
        if not runs:
            continue
        n = max(len(c) for c in runs)
        arr = np.array([c + [c[-1]] * (n - len(c)) for c in runs])
        x = np.arange(1, n + 1)
        line, = ax.plot(x, np.median(arr, axis=0), label=f"{name} (median of {len(runs)})" if len(runs) > 1 else name)
        if len(runs) > 1:
            ax.fill_between(x, arr.min(axis=0), arr.max(axis=0), alpha=0.2, color=line.get_color())
    if target is not None:
        ax.axhline(target, ls="--", color="grey", lw=1, label="target")
    ax.set_xlabel("evaluated trials")
    ax.set_ylabel("best-so-far search score")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def save_figure(fig: Any, path: str | Path) -> Path:
    """Lay out, write (creating the folder) and close a matplotlib figure."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
