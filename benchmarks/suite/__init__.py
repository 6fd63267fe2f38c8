"""The exploration suite: real third-party apps, installed unchanged and pinned, each as an environment recipe.

Why a suite: the explorer's and the synthesizer's rules were grown on a few apps and did not carry over to apps
nobody tuned them for. The suite is their training set; figures are read over all of it (``bench_explore.py``,
``eval_synth.py``), and a change is good when they improve without any app being named in ``explorers/`` or
``pipelines/``. Each app lives in one module of ``benchmarks/suite/apps/`` defining ``APP`` (a ``SuiteApp``); the
registry finds them, so adding an app touches no other file. Installing is the benchmark's job (``python -m
benchmarks.suite install``), never the README's set-up commands: the suite is large and the tests use a few apps.
"""

from benchmarks.suite.registry import KINDS, SuiteApp, all_apps, get_app

__all__ = ["KINDS", "SuiteApp", "all_apps", "get_app"]
