"""The dataset card: a README a trainer reads before using a version, with plots of what is inside."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def _bar(ax, data: dict[str, int], title: str, horizontal: bool = False) -> None:
    keys, vals = list(data.keys()), list(data.values())
    (ax.barh if horizontal else ax.bar)(keys, vals, color="#3b6ea8")
    ax.set_title(title)
    if not horizontal:
        long_labels = max((len(k) for k in keys), default=0) > 6
        ax.tick_params(axis="x", rotation=60 if long_labels else 45, labelsize=7 if long_labels else None)


MAX_BARS = 20  # more step indices than this are drawn as ranges (their labels must stay legible)


def step_index_bars(counts: dict[str, int], max_bars: int = MAX_BARS) -> dict[str, int]:
    """The step-index distribution as at most ``max_bars`` bars: one per index when there are few, else equal
    ranges of indices ("100–199"). Why: a 10,000-step trajectory gave a 10,000-bar plot that nobody can read and
    that took matplotlib over a minute (and ~80 MB) to draw."""
    items = sorted((int(k), n) for k, n in counts.items())
    if len(items) <= max_bars:
        return {str(k): n for k, n in items}
    top = items[-1][0] + 1
    width = -(-top // max_bars)  # ceil: at most max_bars ranges cover 0..top-1
    bars: dict[str, int] = {}
    for k, n in items:
        lo = k // width * width
        hi = min(lo + width, top) - 1
        label = f"{lo}–{hi}" if hi > lo else str(lo)
        bars[label] = bars.get(label, 0) + n
    return bars


def draw_plots(manifest: dict[str, Any], out_dir: Path) -> list[str]:
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    dist = manifest["distributions"]
    for key, title in (("action_type", "Action types"), ("step_index", "Step index")):
        fig, ax = plt.subplots(figsize=(7, 3.5))
        data = dist.get(key, {})
        _bar(ax, step_index_bars(data) if key == "step_index" else data, title)
        fig.tight_layout()
        fig.savefig(out_dir / f"{key}.png", dpi=90)
        plt.close(fig)
        files.append(f"plots/{key}.png")
    fig, ax = plt.subplots(figsize=(7, 4))
    reasons = {f"{s['stage']}:{r}": n for s in manifest["stages"] for r, n in s["reasons"].items()}
    _bar(ax, dict(sorted(reasons.items(), key=lambda kv: kv[1])) or {"(none)": 0}, "Rejected by reason", True)
    fig.tight_layout()
    fig.savefig(out_dir / "rejects.png", dpi=90)
    plt.close(fig)
    files.append("plots/rejects.png")
    return files


def write_card(manifest: dict[str, Any], version_dir: Path, version: str) -> None:
    plots = draw_plots(manifest, version_dir / "plots")
    t = manifest["totals"]
    lines = [
        f"# trajforge curated samples — {version}",
        "",
        "One row per agent step (`schemas.sample.Sample`, schema version "
        f"{manifest['schema_version']}): task, screenshot, action (pixels + 0–1000), instruction, reasoning, "
        "history, difficulty (MobileRL weights, `filters/difficulty.py`), `weight` (1/n for n kept rows that are "
        "the same supervision), `train_target` (False: a recovery's deliberate mistake, context only), lineage "
        "(`negative`: a noise-injected negative, not a demonstration).",
        "",
        f"- unit: **{manifest.get('unit', 'trajectory')}** — "
        + ("a trajectory is kept or rejected whole; a failing step rejects it" if manifest.get("unit", "trajectory")
           == "trajectory" else "rows are kept or dropped one by one (grounding data)"),
        f"- records read: {t['records_in']}, rejected as records: {t['records_rejected']}",
        f"- trajectories: {t.get('trajectories_in', 0)} in, **{t.get('trajectories_kept', 0)} kept** "
        f"({t.get('trajectories_whole', 0)} whole, {t.get('trajectories_with_holes', 0)} with missing steps)",
        f"- step samples: {t['samples_in']} in, {t['samples_rejected']} rejected, **{t['samples_kept']} kept** "
        f"in {len(manifest['shards'])} shard(s)",
        f"- screenshots: {'embedded PNG bytes' if manifest['config']['embed_images'] else 'blob-store references'}",
        "",
        "## Funnel",
        "",
        "| stage | unit | in | kept | rejected | reasons |",
        "|---|---|---|---|---|---|",
    ]
    for s in manifest["stages"]:
        reasons = ", ".join(f"{r} {n}" for r, n in s["reasons"].items()) or "—"
        lines.append(f"| {s['stage']} | {s['unit']} | {s['in']} | {s['kept']} | {s['rejected']} | {reasons} |")
    lines += ["", "## Load it", "", "```python",
              "import pandas as pd; df = pd.read_parquet('data/')",
              "import duckdb; duckdb.sql(\"select action.type, count(*) from 'data/*.parquet' group by 1\")",
              "from datasets import load_dataset; ds = load_dataset('parquet', data_files='data/*.parquet')",
              "```", "", "## Plots", ""]
    lines += [f"![{p}]({p})" for p in plots]
    lines += ["", "Rejected records (with stage, reason, detail and the record itself) are in `rejects/`; "
              "output expectation results in `expectations.json`; counts and lineage in `manifest.json`.", ""]
    (version_dir / "README.md").write_text("\n".join(lines), encoding="utf-8")
