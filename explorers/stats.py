"""Numbers about a crawled graph: states, transitions, coverage over time (and a PNG of it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq


@dataclass
class GraphStats:
    states: int
    transitions: int
    effective: int
    errors: int
    observations: int
    workers: list[str]
    coverage: list[tuple[int, int]]  # (transition count, distinct states seen so far)


def graph_stats(app_dir: Path) -> GraphStats:
    nodes = pq.read_table(app_dir / "nodes.parquet").to_pylist()
    trans = pq.read_table(app_dir / "transitions.parquet", columns=["to_state", "from_state", "effective",
                                                                      "error", "timestamp"]).to_pylist()
    n_obs = pq.ParquetFile(app_dir / "observations.parquet").metadata.num_rows
    trans.sort(key=lambda t: t["timestamp"])
    seen: set[str] = set()
    coverage = []
    for i, t in enumerate(trans, start=1):
        seen.update((t["from_state"], t["to_state"]))
        coverage.append((i, len(seen)))
    workers = sorted({w for n in nodes for w in n["workers"]})
    return GraphStats(len(nodes), len(trans), sum(bool(t["effective"]) for t in trans),
                      sum(t["error"] is not None for t in trans), n_obs, workers, coverage)


def plot_coverage(stats: GraphStats, path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = [c[0] for c in stats.coverage]
    ax.plot(xs, [c[1] for c in stats.coverage])
    ax.set_xlabel("transitions")
    ax.set_ylabel("distinct states")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
