"""The hostile-input corpus through every entry point: no traceback, the documented exit code, every good record
kept, every bad one rejected with its stage and reason, counts reconciled with the true number of inputs.

One module-scoped corpus (``tests/hostile_corpus.py``); each entry point runs as a user runs it, in a
subprocess through the console script's guard. ``benchmarks/bench_robustness.py`` prints the same totals.
"""

from __future__ import annotations

import pytest

from tests.hostile_corpus import HostileCorpus, build_hostile_corpus, judge, run_cli

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> HostileCorpus:
    return build_hostile_corpus(tmp_path_factory.mktemp("hostile"))


def test_the_corpus_has_at_least_40_kinds_of_bad_input(corpus):
    assert len(corpus.bad_kinds) >= 40, sorted(corpus.bad_kinds)


ENTRIES = ["validate", "curate", "import", "synth", "gate", "curate-out-under-a-file", "curate-out-symlink-loop",
           "curate-blobs-symlink-loop", "curate-next-version-is-a-file", "curate-empty-input",
           "import-out-under-a-file", "import-empty-input", "synth-empty-graph", "synth-out-under-a-file",
           "validate-empty"]


@pytest.mark.parametrize("name", ENTRIES)
def test_entry_point_survives_the_corpus(corpus, name):
    [entry] = [e for e in corpus.entries if e.name == name]
    outcome = judge(entry, run_cli(entry.args))
    assert not outcome.problems, "\n".join(outcome.problems)


def test_every_entry_of_the_corpus_is_tested(corpus):
    assert {e.name for e in corpus.entries} == set(ENTRIES)
