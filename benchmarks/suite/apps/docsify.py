"""docsify (npm): a documentation site rendered in the browser from Markdown (hash routes, sidebar, search)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from benchmarks.suite.apps._classic import LOOPBACK
from benchmarks.suite.registry import SuiteApp
from tests import thirdparty_apps as tpa


def seed(folder: Path) -> None:
    site = folder / "site"
    shutil.copytree(tpa.install_docsify(), site / "lib")
    (site / "index.html").write_text(tpa.DOCSIFY_INDEX, encoding="utf-8")
    for name, text in tpa.DOCSIFY_PAGES.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text, encoding="utf-8")


def config(snapshot: Path) -> dict[str, Any]:
    app = tpa.docsify_app("")
    app["environment"] = {"start": [sys.executable, "-m", "http.server", "{port}", "--bind", LOOPBACK, "--directory",
                                    "{data}/site"],
                          "snapshot": {"files": str(snapshot)}, "health": {"path": "/"}}
    return app


APP = SuiteApp(name="docsify", kind="docs", source=f"npm:docsify@{tpa.DOCSIFY_VERSION}", single_page=True,
               admin_bulk=False, install=tpa.install_docsify,
               installed=tpa.DOCSIFY_LIB.exists, seed=seed, config=config, coverage="js",
               notes="Static files: nothing a crawl does can write.")
