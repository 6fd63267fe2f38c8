"""What a suite app is, and where the suite's apps are found (one module per app under ``apps/``)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from explorers.local_servers import REPO_ROOT

INSTALL_DIR = REPO_ROOT / "tools" / "thirdparty"  # gitignored; one folder (venv / node_modules) per app
SNAPSHOT_DIR = INSTALL_DIR / "snapshots"  # the seeded pristine data of each app, built once, copied per instance

# The kinds of app the suite must span (at least 7 of them over the whole suite).
KINDS = ("wiki", "cms", "commerce", "finance", "issues", "notebook", "dashboard", "files", "forum", "calendar",
         "database", "chat", "docs")


@dataclass(frozen=True)
class SuiteApp:
    """One real app of the suite.

    ``install()`` installs the pinned release into ``INSTALL_DIR`` (idempotent, safe to rerun; raises with one line
    naming the app on failure); ``installed()`` says whether it is there. ``seed(folder)`` writes the app's pristine
    data — realistic content made through the app's own tools or API, never a hand-edited database of another
    version — into an empty ``folder``. ``config(snapshot)`` returns the crawl config's app entry (a dict as a
    user would write it in YAML, ``explorers.config.AppConfig``): ``entry`` a path, ``login`` if any, and an
    ``environment`` recipe whose ``snapshot.files`` is ``snapshot`` and whose ``start`` serves one instance on
    ``{port}`` from ``{data}``. ``admin_user`` is the account the crawl logs in as (the most powerful one: what
    read-only mode and environments must make harmless).
    """

    name: str  # the id used by ``--apps`` and as the crawl's app id
    kind: str  # one of KINDS
    source: str  # where it comes from, pinned: "pypi:fava==1.30", "npm:node-red@4.1.1", "debian:mediawiki"
    single_page: bool  # its screens change without page loads (client-side routing)
    admin_bulk: bool  # it has admin screens with bulk actions (select several rows, act on all)
    install: Callable[[], object]  # what it returns (an installed path) is ignored
    installed: Callable[[], bool]
    seed: Callable[[Path], None]
    config: Callable[[Path], dict[str, Any]]
    admin_user: str = ""
    notes: str = ""  # what a reader should know (what the seed holds, what the app cannot do here)
    coverage: str = ""  # "python:<package>" (served under coverage.py) or "js" (Chromium precise coverage) or ""
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"suite app {self.name!r}: kind {self.kind!r} is not one of {', '.join(KINDS)}")

    def snapshot(self, rebuild: bool = False) -> Path:
        """The app's pristine data folder, seeded once (``rebuild`` seeds it again)."""
        import shutil

        target = SNAPSHOT_DIR / self.name
        stamp = target / ".seeded"
        if stamp.exists() and not rebuild:
            return target
        tmp = SNAPSHOT_DIR / f".{self.name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        self.seed(tmp)
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
        stamp.write_text(self.source + "\n")
        return target


def all_apps() -> dict[str, SuiteApp]:
    """Every app of the suite, by name (each module of ``benchmarks/suite/apps`` that defines ``APP``)."""
    from benchmarks.suite import apps as package

    found: dict[str, SuiteApp] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        app = getattr(module, "APP", None)
        if isinstance(app, SuiteApp):
            if app.name in found:
                raise ValueError(f"two suite apps are named {app.name!r}")
            found[app.name] = app
    return found


def get_app(name: str) -> SuiteApp:
    apps = all_apps()
    if name not in apps:
        raise SystemExit(f"unknown suite app {name!r}; known: {', '.join(apps)}")
    return apps[name]
