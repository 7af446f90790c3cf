"""Where a benchmark's results go: a figure (two rows, one column per world size) saved as
PNG, its rows as JSON next to it, both named on stdout."""
from __future__ import annotations

import json
import os


def figure_per_world_size(world_sizes, **kwargs):
    """(figure, axes[2][len(world_sizes)]) drawn off-screen (Agg: a script has no display)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(2, len(world_sizes), figsize=(5.5 * len(world_sizes), 7), squeeze=False,
                        **kwargs)


def save(fig, rows, out) -> None:
    """The figure at `out`, the rows at `out` with .json for its suffix."""
    import matplotlib.pyplot as plt

    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    data = os.path.splitext(out)[0] + ".json"
    with open(data, "w") as f:
        json.dump(rows, f, indent=1)
    print(f"\nplot: {out}  data: {data}")
