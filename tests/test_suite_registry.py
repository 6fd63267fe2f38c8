"""The exploration suite's registry (``benchmarks/suite``): every app module defines a usable recipe, and the suite
meets issue 45's counts. Fast: nothing is installed, seeded or started (no network); ``config`` is only built
and validated as the crawl config would be.

The counts are read from the real registry, so on a branch that holds only part of the suite they fail, naming
what is short: that is the point of the test.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.suite import apps as apps_package
from benchmarks.suite.registry import KINDS, SuiteApp, all_apps
from explorers.config import AppConfig
from explorers.local_servers import REPO_ROOT

ORIGINALS = {"tiddlywiki", "ihatemoney", "datasette", "trac", "docsify", "node-red"}

# A pinned source: one release of one package from PyPI, npm or Debian (Debian's release pins its version).
PINNED = (re.compile(r"pypi:[A-Za-z0-9][A-Za-z0-9._-]*==\d[0-9A-Za-z.+!-]*"),
          re.compile(r"npm:(@[a-z0-9._-]+/)?[a-z0-9][a-z0-9._-]*@\d[0-9A-Za-z.+-]*"),
          re.compile(r"debian:[a-z0-9][a-z0-9.+-]+(=[0-9A-Za-z.:+~-]+)?( \(.*\))?"))


def _app_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(apps_package.__path__) if not m.name.startswith("_"))


@pytest.fixture(scope="module")
def suite() -> dict[str, SuiteApp]:
    return all_apps()


def test_every_app_module_defines_an_app(suite: dict[str, SuiteApp]) -> None:
    modules = _app_modules()
    assert modules, "benchmarks/suite/apps holds no app module"
    for name in modules:
        app = getattr(importlib.import_module(f"{apps_package.__name__}.{name}"), "APP", None)
        assert isinstance(app, SuiteApp), f"benchmarks/suite/apps/{name}.py defines no APP = SuiteApp(...)"
        assert suite.get(app.name) is app, f"{name}.py: APP {app.name!r} is not in the registry under its name"
    # one app per module: the registry holds exactly the modules' apps, so no two share a name
    assert len(suite) == len(modules)


@pytest.mark.parametrize("name", sorted(all_apps()))
def test_app_is_a_pinned_recipe(name: str, tmp_path: Path) -> None:
    app = all_apps()[name]
    assert app.kind in KINDS, f"{name}: kind {app.kind!r}"
    assert any(p.fullmatch(app.source) for p in PINNED), f"{name}: source {app.source!r} is not pinned"
    assert app.coverage == "" or app.coverage == "js" or app.coverage.startswith("python:"), (name, app.coverage)
    snapshot = tmp_path / "snapshot"
    entry = app.config(snapshot)
    config = AppConfig.model_validate(entry)  # the crawl config's own checks ({port} in start, known fields)
    assert config.id == name
    assert config.environment is not None, f"{name}: its config has no environment recipe"
    assert Path(config.environment.snapshot.files or "") == snapshot, f"{name}: the snapshot it serves"
    start = config.environment.start if isinstance(config.environment.start, str) else " ".join(
        config.environment.start)
    assert "{data}" in start or config.environment.cwd == "{data}", f"{name}: start does not serve {{data}}"


def test_bad_kind_is_refused() -> None:
    with pytest.raises(ValueError, match=r"'shop'.*kind 'bazaar'"):
        SuiteApp(name="shop", kind="bazaar", source="pypi:x==1", single_page=False, admin_bulk=False,
                 install=lambda: None, installed=lambda: False, seed=lambda folder: None, config=lambda snap: {})


def test_suite_meets_the_issue_counts(suite: dict[str, SuiteApp]) -> None:
    apps = list(suite.values())
    new = sorted(a.name for a in apps if a.name not in ORIGINALS)
    kinds = sorted({a.kind for a in apps})
    figures = {
        "apps": (len(apps), 14),
        "kinds": (len(kinds), 7),
        "apps beyond the six originals": (len(new), 8),
        "single-page apps": (sum(a.single_page for a in apps), 5),
        "apps with admin bulk actions": (sum(a.admin_bulk for a in apps), 4),
    }
    short = [f"{what}: {have} < {need}" for what, (have, need) in figures.items() if have < need]
    assert not short, f"suite {sorted(suite)} is short of issue 45's counts: {'; '.join(short)}"
    missing = sorted(ORIGINALS - set(suite))
    assert not missing, f"the six original apps must stay in the suite; missing {missing}"


def test_list_prints_every_app(suite: dict[str, SuiteApp]) -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks.suite", "list"], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines() if line.strip()}
    for name, app in suite.items():
        assert name in rows, f"`python -m benchmarks.suite list` does not list {name}"
        assert rows[name].split()[1] == app.kind and rows[name].endswith(app.source), rows[name]
    assert f"{len(suite)} apps," in done.stdout


def test_unknown_app_is_refused_naming_it() -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks.suite", "install", "--apps", "no-such-app"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "no-such-app" in done.stderr
