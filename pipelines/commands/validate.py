"""``trajforge validate FILE``: check records against the schema and report every bad one by line, id and field."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from schemas.recordio import iter_records
from schemas.records import KINDS

MAX_SHOWN = 200


def register(app: typer.Typer) -> None:
    @app.command("validate")
    def validate(
        files: list[Path] = typer.Argument(..., exists=True, dir_okay=False, help="JSONL, JSON or Parquet files."),
        kind: str | None = typer.Option(
            None, help=f"Record kind ({', '.join(KINDS)}); guessed from each record or the Parquet metadata."
        ),
    ) -> None:
        """Validate record files; exit code 1 when any record is bad (every bad record is listed)."""
        if kind is not None and kind not in KINDS:
            raise typer.BadParameter(f"unknown kind {kind!r}; choose from {', '.join(KINDS)}")
        console = Console(stderr=False)
        total, bad, shown = 0, 0, 0
        by_field: Counter[str] = Counter()
        table = Table("file", "line", "record", "field", "problem", title="Invalid records", show_lines=False)
        for path in files:
            for parsed in iter_records(path, kind):
                total += 1
                if parsed.ok:
                    continue
                bad += 1
                for err in parsed.errors:
                    by_field[err.field] += 1
                    if shown < MAX_SHOWN:
                        table.add_row(path.name, str(err.line or ""), err.record, err.field, err.message)
                        shown += 1
        if bad:
            console.print(table)
            if shown >= MAX_SHOWN:
                console.print(f"(first {MAX_SHOWN} problems shown)")
            console.print("Problems by field: " + ", ".join(f"{f}={n}" for f, n in by_field.most_common(10)))
        console.print(f"{total - bad} valid, {bad} invalid, {total} records in {len(files)} file(s)")
        raise typer.Exit(1 if bad else 0)
