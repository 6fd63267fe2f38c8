"""datasette (PyPI): a SQLite explorer over a seeded lending-library database (authors, books, members, loans)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.suite.apps._classic import LOOPBACK, serve_script
from benchmarks.suite.registry import SuiteApp
from tests import thirdparty_apps as tpa


def seed(folder: Path) -> None:
    tpa.seed_library(folder / "library.db")
    (folder / "metadata.json").write_text(json.dumps(tpa.DATASETTE_METADATA), encoding="utf-8")


def config(snapshot: Path) -> dict[str, Any]:
    app = tpa.datasette_app("")
    python = tpa.venv_python(tpa.DATASETTE_VENV)
    app["environment"] = {
        "start": [str(python), str(serve_script("datasette", tpa.DATASETTE_SERVE)), "{data}/library.db",
                  "{data}/metadata.json", LOOPBACK, "{port}"],
        "snapshot": {"files": str(snapshot)}, "health": {"path": "/-/versions.json"}}
    return app


APP = SuiteApp(name="datasette", kind="database", source=f"pypi:datasette=={tpa.DATASETTE_VERSION}",
               single_page=False, admin_bulk=False, install=tpa.install_datasette,
               installed=tpa.venv_python(tpa.DATASETTE_VENV).exists, seed=seed, config=config,
               coverage="python:datasette", notes="Public, read-only by design: facets, row pages, a SQL editor.")
