"""Trac (PyPI): wiki and issue tracker; ``trac-admin initenv`` plus seeded tickets and a project wiki page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.suite.apps._classic import LOOPBACK, serve_script
from benchmarks.suite.registry import SuiteApp
from tests import thirdparty_apps as tpa


def seed(folder: Path) -> None:
    tpa.init_trac(folder / "env", tpa.install_trac())


def config(snapshot: Path) -> dict[str, Any]:
    app = tpa.trac_app("")
    python = tpa.venv_python(tpa.TRAC_VENV)
    app["environment"] = {"start": [str(python), str(serve_script("trac", tpa.TRAC_SERVE)), "{data}/env", LOOPBACK,
                                    "{port}"],
                          "snapshot": {"files": str(snapshot)}, "health": {"path": "/"},
                          "digest_exclude": ["env/log/*", "env/files/*"]}
    return app


APP = SuiteApp(name="trac", kind="issues", source=f"pypi:trac=={tpa.TRAC_VERSION}", single_page=False,
               admin_bulk=False, install=tpa.install_trac,
               installed=tpa.venv_python(tpa.TRAC_VENV).exists, seed=seed, config=config, coverage="python:trac",
               notes="Crawled as an anonymous visitor who may file tickets (no account is configured).")
