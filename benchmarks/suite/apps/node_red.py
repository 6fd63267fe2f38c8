"""Node-RED (npm): the flow editor, a single-page IDE-like app, with two seeded flow tabs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.suite.apps._classic import node
from benchmarks.suite.registry import SuiteApp
from tests import thirdparty_apps as tpa


def seed(folder: Path) -> None:
    user = folder / "node-red-user"
    user.mkdir(parents=True)
    (user / "settings.js").write_text(tpa.NODE_RED_SETTINGS, encoding="utf-8")
    (user / "flows.json").write_text(json.dumps(tpa._node_red_flows(), indent=1), encoding="utf-8")


def config(snapshot: Path) -> dict[str, Any]:
    app = tpa.node_red_app("")
    app["environment"] = {
        "start": [node(), str(tpa.NODE_RED_JS), "--port", "{port}", "--userDir", "{data}/node-red-user",
                  "--settings", "{data}/node-red-user/settings.js"],
        "snapshot": {"files": str(snapshot)}, "health": {"path": "/settings"},
        # the runtime's own bookkeeping, rewritten at every start
        "digest_exclude": ["node-red-user/.config.*", "node-red-user/lib/*", "node-red-user/package.json",
                           "node-red-user/.*.backup"]}
    return app


APP = SuiteApp(name="node-red", kind="notebook", source=f"npm:node-red@{tpa.NODE_RED_VERSION}", single_page=True,
               admin_bulk=False, install=tpa.install_node_red,
               installed=tpa.NODE_RED_JS.exists, seed=seed, config=config, coverage="js",
               notes="A local editor: no login. Deploy writes the flows (denied by its crawl entry outside an "
                     "environment).")
