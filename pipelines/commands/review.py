"""``trajforge review …``: the annotator web app, accounts, label export and the human gate."""

from __future__ import annotations

from pathlib import Path

import typer

from pipelines.commands.exits import OUTPUT
from pipelines.commands.plain import PlainConsole

DB_HELP = ("Label database URL: sqlite:///FILE or postgresql://user:pw@host:port/db "
           "(default: $TRAJFORGE_REVIEW_DB, else sqlite:///trajforge-review.sqlite in the current directory).")


def register(app: typer.Typer) -> None:
    review = typer.Typer(help="Annotator review: web UI over dataset shards, labels in a database, human gate.",
                         no_args_is_help=True)
    app.add_typer(review, name="review")

    @review.command("serve")
    def serve(
        data: Path = typer.Option(..., exists=True, file_okay=False, help="Dataset version directory (vNNNN/)."),
        db: str | None = typer.Option(None, help=DB_HELP),
        blobs: Path | None = typer.Option(None, file_okay=False,
                                          help="Blob store of screenshots the shards reference (not embedded)."),
        host: str = typer.Option("127.0.0.1", help="Interface to listen on (keep loopback unless behind a proxy)."),
        port: int = typer.Option(8765, help="TCP port."),
        labels_per_sample: int = typer.Option(1, min=1, help="Distinct annotators each sample needs."),
        overlap: float = typer.Option(0.1, min=0.0, max=1.0,
                                      help="Fraction of samples that get one extra annotator (for agreement)."),
        secure_cookies: bool = typer.Option(False, help="Mark cookies Secure (when served over HTTPS)."),
    ) -> None:
        """Serve the review web app for one dataset version."""
        import uvicorn

        from review.app import ReviewConfig, create_app
        from review.dataset import DatasetError

        console = PlainConsole()
        try:
            web = create_app(ReviewConfig(data_dir=data, db_url=db, blobs=blobs, labels_per_sample=labels_per_sample,
                                          overlap=overlap, secure_cookies=secure_cookies))
        except DatasetError as exc:
            console.print(f"error: {exc}", style="red")
            raise typer.Exit(2) from None
        ds = web.state.review.ds
        console.print(f"Reviewing {ds.name}: {len(ds.refs)} samples, {len(ds.rejected)} gate rejects "
                      f"→ http://{host}:{port}/")
        if host not in ("127.0.0.1", "localhost", "::1"):
            console.print("warning: listening beyond loopback; put it behind HTTPS.", style="yellow")
        uvicorn.run(web, host=host, port=port, log_level="warning")

    @review.command("add-user")
    def add_user(
        name: str = typer.Argument(..., help="Annotator user name (letters, digits, . _ -)."),
        db: str | None = typer.Option(None, help=DB_HELP),
        password: str = typer.Option(..., prompt=True, hide_input=True, confirmation_prompt=True,
                                     envvar="TRAJFORGE_REVIEW_PASSWORD",
                                     help="Password (prompted; or $TRAJFORGE_REVIEW_PASSWORD for scripts)."),
    ) -> None:
        """Create an annotator account (password hashed with scrypt)."""
        from sqlalchemy.orm import Session

        from review.auth import AuthError, add_annotator
        from review.db import make_engine

        engine = make_engine(db)
        try:
            with Session(engine) as s:
                add_annotator(s, name, password)
        except AuthError as exc:
            PlainConsole().print(f"error: {exc}", style="red")
            raise typer.Exit(1) from None
        PlainConsole().print(f"Created annotator {name!r}.")

    @review.command("export-labels")
    def export_labels_cmd(
        out: Path = typer.Option(..., help="Output file: .jsonl, .csv or .parquet."),
        db: str | None = typer.Option(None, help=DB_HELP),
        fmt: str | None = typer.Option(None, "--format", help="jsonl | csv | parquet (default: from --out)."),
        latest: bool = typer.Option(False, help="Only each annotator's latest verdict per sample (default: all)."),
    ) -> None:
        """Export labels (the full audit trail by default) with annotator, time and content hash."""
        from review.db import make_engine
        from review.export import export_labels

        try:
            n = export_labels(make_engine(db), out, fmt, latest_only=latest)
        except ValueError as exc:
            PlainConsole().print(f"error: {exc}", style="red")
            raise typer.Exit(2) from None
        PlainConsole().print(f"Wrote {n} labels to {out}")

    @review.command("apply-labels")
    def apply_labels_cmd(
        data: Path = typer.Option(..., exists=True, file_okay=False, help="Dataset version directory to gate."),
        db: str | None = typer.Option(None, help=DB_HELP),
        out: Path | None = typer.Option(None, help="Next version directory (default: publish as the next free "
                                                   "vNNNN beside --data, the curation layout)."),
        policy: str = typer.Option("any-reject", help="any-reject (one reject drops a step) | majority."),
        overwrite: bool = typer.Option(False, help="Replace --out if it exists (otherwise refuse)."),
    ) -> None:
        """Human gate: drop rejected steps, apply edits, write the next dataset version with counts."""
        from review.db import make_engine
        from review.gate import GateError, apply_labels
        from schemas.fileio import OutputError

        console = PlainConsole()
        try:
            path, c = apply_labels(data, make_engine(db), out, policy=policy, overwrite=overwrite, progress=True)
        except GateError as exc:
            console.print(f"error: {exc}", style="red")
            raise typer.Exit(1) from None
        except OutputError as exc:
            console.print(f"error: {exc}", style="red")
            raise typer.Exit(OUTPUT) from None
        console.print(f"Wrote {path}: input {c.input}, output {c.kept}, rejected {c.rejected}, edited {c.edited}, "
                      f"accepted {c.accepted}, unlabelled {c.unlabelled}, stale labels {c.stale}, "
                      f"invalid {c.invalid}")
