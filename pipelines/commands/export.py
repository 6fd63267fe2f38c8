"""``trajforge export FORMAT --in PATH --out DIR``: write trajectory shards in the formats other trainers read."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from pipelines.exporters.registry import EXPORTERS
from pipelines.exporters.runner import run_export


def register(app: typer.Typer) -> None:
    formats = ", ".join(f"{n} ({d})" for n, (_, d) in EXPORTERS.items())

    @app.command("export", help=f"Export trajectory shards. Formats: {formats}.")
    def export(
        fmt: str = typer.Argument(..., metavar="FORMAT", help=f"One of: {', '.join(EXPORTERS)}."),
        src: Path = typer.Option(..., "--in", exists=True, help="A trajectory shard (.parquet/.jsonl) or a folder "
                                 "(an import's --out, or a folder of shards)."),
        out: Path = typer.Option(..., "--out", help="Output folder: FORMAT.jsonl, images/, rejects.parquet."),
        blobs: str | None = typer.Option(None, "--blobs", help="Blob store with the screenshots (default: the "
                                         "blobs/ folder next to --in)."),
        coords: str = typer.Option("norm1000", "--coords", help="guilibra-sft point convention: norm1000 | qwen25."),
        mix: str = typer.Option("both", "--mix", help="guilibra-sft samples per step: reasoning | direct | both."),
        json_summary: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    ) -> None:
        """Export trajectories as FORMAT samples plus an images folder."""
        if fmt not in EXPORTERS:
            raise typer.BadParameter(f"unknown format {fmt!r}; choose from {', '.join(EXPORTERS)}")
        if coords not in ("norm1000", "qwen25"):
            raise typer.BadParameter(f"--coords must be norm1000 or qwen25, got {coords!r}")
        if mix not in ("reasoning", "direct", "both"):
            raise typer.BadParameter(f"--mix must be reasoning, direct or both, got {mix!r}")
        console = Console(stderr=True)
        with Progress(SpinnerColumn(), TextColumn("[bold]export {task.fields[fmt]}"),
                      TextColumn("{task.fields[ok]} exported, {task.fields[bad]} rejected"), TimeElapsedColumn(),
                      console=console, transient=True) as progress:
            task = progress.add_task("export", total=None, fmt=fmt, ok=0, bad=0)
            counts = {"ok": 0, "bad": 0}

            def on_record(ok: bool) -> None:
                counts["ok" if ok else "bad"] += 1
                progress.update(task, advance=1, **counts)

            try:
                summary = run_export(fmt, src, out, blobs, {"coords": coords, "mix": mix}, on_record)
            except FileNotFoundError as exc:
                raise typer.BadParameter(str(exc)) from None
        if json_summary:
            typer.echo(json.dumps(summary.as_dict(), indent=2))
            return
        table = Table("outcome", "reason", "count", title=f"export {fmt}")
        table.add_row("exported trajectories", "", str(summary.trajectories))
        table.add_row("samples written", "", str(summary.samples))
        for reason, n in summary.rejected.most_common():
            table.add_row("rejected", reason, str(n))
        Console().print(table)
        typer.echo(f"{summary.samples} samples → {summary.output} ({summary.images} new images)")
