"""TiddlyWiki (npm, Node.js server edition): a single-page wiki seeded with a dozen tiddlers (tests/thirdparty.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from benchmarks.suite.apps._classic import LOOPBACK, node
from benchmarks.suite.registry import SuiteApp
from tests import thirdparty as tp


def seed(folder: Path) -> None:
    subprocess.run([node(), str(tp.install_tiddlywiki()), str(folder), "--init", "server"], check=True,
                   capture_output=True, timeout=120)
    tiddlers = folder / "tiddlers"
    tiddlers.mkdir(parents=True, exist_ok=True)
    for i, (title, text) in enumerate(tp.SEED_TIDDLERS.items()):
        (tiddlers / f"seed{i}.tid").write_text(tp._tid(title, text), encoding="utf-8")


def config(snapshot: Path) -> dict[str, Any]:
    app = tp.tiddlywiki_app("")
    app["environment"] = {
        "start": [node(), str(tp.TIDDLYWIKI_JS), "{data}", "--listen", "port={port}", f"host={LOOPBACK}"],
        "snapshot": {"files": str(snapshot)}, "health": {"path": "/status"},
        # the story river (which tiddlers are open) is saved as a tiddler on every navigation: UI state, not data
        "digest_exclude": ["tiddlers/$__StoryList*.tid", "tiddlers/$__temp*"],
        "reset_on_restart": "always"}  # tiddlers live in the server's memory too
    return app


APP = SuiteApp(name="tiddlywiki", kind="wiki", source=f"npm:tiddlywiki@{tp.TIDDLYWIKI_VERSION}", single_page=True,
               admin_bulk=False, install=tp.install_tiddlywiki,
               installed=tp.TIDDLYWIKI_JS.exists, seed=seed, config=config, coverage="js",
               notes="No accounts: everyone may edit. The seed is the project's test wiki (notes, tags, a journal).")
