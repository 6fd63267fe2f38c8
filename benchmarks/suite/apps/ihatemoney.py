"""I Hate Money (PyPI): shared-expense budgets. The demo project (members and bills) is the seed, created by the
app itself on its first visit to ``/demo``; the crawl enters as that project's member."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.suite.apps._classic import LOOPBACK, run_once, serve_script
from benchmarks.suite.registry import SuiteApp
from tests import thirdparty as tp

# The settings name the database beside themselves, so a copied data folder is a self-contained instance.
SETTINGS = ("import os\nSQLALCHEMY_DATABASE_URI = 'sqlite:///' + os.path.join(os.path.dirname(os.path.abspath("
            "__file__)), 'ihatemoney.db')\nSECRET_KEY = 'trajforge-test-only'\nACTIVATE_DEMO_PROJECT = True\n"
            "SESSION_COOKIE_SECURE = False\nBABEL_DEFAULT_TIMEZONE = 'UTC'\n")
SERVE = ("import os, sys\nos.environ['IHATEMONEY_SETTINGS_FILE_PATH'] = os.path.join(sys.argv[1], 'ihatemoney.cfg')"
         "\nsys.argv = [sys.argv[0], *sys.argv[2:]]\n" + tp.IHATEMONEY_SERVE)


def _argv(data: str) -> list[str]:
    return [str(tp.IHATEMONEY_PYTHON), str(serve_script("ihatemoney", SERVE)), data, LOOPBACK, "{port}"]


def seed(folder: Path) -> None:
    (folder / "ihatemoney.cfg").write_text(SETTINGS, encoding="utf-8")
    run_once(_argv(str(folder)), folder, visit=["/demo"])


def config(snapshot: Path) -> dict[str, Any]:
    app = tp.ihatemoney_app("")
    app["environment"] = {"start": _argv("{data}"), "snapshot": {"files": str(snapshot)}, "health": {"path": "/"}}
    return app


APP = SuiteApp(name="ihatemoney", kind="finance", source=f"pypi:ihatemoney=={tp.IHATEMONEY_VERSION}",
               single_page=False, admin_bulk=False, install=tp.install_ihatemoney,
               installed=tp.IHATEMONEY_PYTHON.exists, seed=seed, config=config, coverage="python:ihatemoney",
               notes="Project members, bills and settlements of the app's own demo project.")
