"""Shared plumbing of the suite's PyPI apps: each lives in its own pinned virtualenv under ``tools/thirdparty``.

Why a venv per app: their pins (Django, Flask, SQLAlchemy, pandas…) clash with each other and with the
project's ``.venv``. Installing works like ``tests.thirdparty_apps.install_venv_app`` (its helpers: a version
stamp, a lock, one line naming what failed) but takes several pinned requirements and an ``after`` step; seeding
runs the app's own Python API or commands inside that venv (``run_python``), so the seed is made by the installed
release itself, never hand-written into its database.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from benchmarks.suite.registry import INSTALL_DIR


class SeedError(RuntimeError):
    """A seed step failed; the message names the app, the step and the tail of its output."""


def venv_dir(name: str) -> Path:
    return INSTALL_DIR / f"{name}-venv"


def venv_python(name: str) -> Path:
    return venv_dir(name) / "bin" / "python"


def venv_bin(name: str, tool: str) -> Path:
    return venv_dir(name) / "bin" / tool


def pypi_installer(name: str, requirements: list[str], version: str,
                   after: Callable[[Path], None] | None = None) -> tuple[Callable[[], None], Callable[[], bool]]:
    """``(install, installed)`` for an app pip-installs as ``requirements`` (the first is the app, pinned ``==
    version``; the others pin what the app needs but does not declare). ``after(venv)`` runs once after pip (a
    project the app's own generator makes); its work is marked by a second stamp so a rerun does not redo it."""
    from tests.thirdparty import _locked, _run, _stamped

    venv, python = venv_dir(name), venv_python(name)
    stamp, after_stamp = venv / ".installed-version", venv / ".suite-after"

    def installed() -> bool:
        return (_stamped(stamp, version) and python.exists()
                and (after is None or _stamped(after_stamp, version)))

    def install() -> None:
        if installed():
            return
        with _locked(name):
            if not _stamped(stamp, version) or not python.exists():
                base = shutil.which("python3.11") or shutil.which("python3") or sys.executable
                if not python.exists():
                    _run([base, "-m", "venv", str(venv)], f"create the {name} virtualenv")
                _run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *requirements],
                     f"pip install {' '.join(requirements)}")
                stamp.write_text(version)
                after_stamp.unlink(missing_ok=True)
            if after is not None and not _stamped(after_stamp, version):
                after(venv)
                after_stamp.write_text(version)

    return install, installed


def run_in(name: str, argv: list[str | Path], what: str, *, cwd: Path | None = None,
           env: dict[str, str] | None = None, stdin: str | None = None, timeout_s: float = 600) -> str:
    """Run a command of the app (its venv's ``bin`` first on PATH); returns stdout, raises ``SeedError``."""
    full_env = {**os.environ, "PATH": f"{venv_dir(name) / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
                "PYTHONUNBUFFERED": "1", **(env or {})}
    full_env.pop("PYTHONPATH", None)  # the app's venv must not see the project's modules
    try:
        done = subprocess.run([str(a) for a in argv], cwd=cwd, env=full_env, input=stdin, capture_output=True,
                              text=True, timeout=timeout_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SeedError(f"{name}: {what}: {exc}") from None
    if done.returncode != 0:
        raise SeedError(f"{name}: {what} failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    return done.stdout


def run_python(name: str, script: str, *args: str | Path, what: str, cwd: Path | None = None,
               env: dict[str, str] | None = None) -> str:
    """Run ``script`` with the app's venv python (its own API does the seeding)."""
    return run_in(name, [venv_python(name), "-c", script, *args], what, cwd=cwd, env=env)
