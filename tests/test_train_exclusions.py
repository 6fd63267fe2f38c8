"""Rows that must not be learned: noise negatives (``lineage.negative``) and recovery mistakes (``train_target``).

A shard mixes plain trajectories, a noise-injected copy and a recovery trajectory whose step 1 is the deliberate
wrong step. SFT must not train on the copy (unless ``data.include_negatives``) and never on the wrong step; GRPO
must not use either as ground truth; evaluation must not score against them. Each assertion fails when the
corresponding filter in ``training.data.exclusion`` is switched off.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tiny_model import tiny_model

import factories
from schemas import BlobStore, samples_from_trajectory
from schemas.recordio import write_parquet
from training.config import TrainConfig
from training.data import DataConfig, Excluded, Renderer, SFTStream, ShardStream, collate, exclusion, shard_files
from training.grpo import load_pool
from training.loop import sft_batches
from training.metrics import RejectsLog
from training.models import load_model_and_processor

CFG = dict(max_pixels=12544, min_pixels=784, mix="direct")


def _dataset(root: Path, negatives: bool = True) -> tuple[Path, dict[str, set[str]]]:
    store = BlobStore(root / "blobs")
    plain = [factories.trajectory(store, n_steps=3, seed=s) for s in range(2)]
    noisy = factories.trajectory(store, n_steps=3, seed=7, tid="noisy")
    noisy = noisy.model_copy(update={"lineage": noisy.lineage.model_copy(update={"negative": True})})
    recovery = factories.trajectory(store, n_steps=3, seed=8, tid="recovery")
    steps = list(recovery.steps)
    steps[1] = steps[1].model_copy(update={"train_target": False, "instruction": "Tap the wrong tab"})
    recovery = recovery.model_copy(update={"steps": steps})
    trajs = [*plain, recovery] + ([noisy] if negatives else [])
    rows = [s for t in trajs for s in samples_from_trajectory(t, store.get)]
    write_parquet(rows, root / "data" / "part-000.parquet", "sample")
    ids = {
        "plain": {r.id for r in rows if r.trajectory_id not in ("noisy", "recovery")},
        "negative": {r.id for r in rows if r.trajectory_id == "noisy"},
        "mistake": {"recovery:1"},
        "recovery_targets": {"recovery:0", "recovery:2"},
    }
    return root, ids


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("exclusions")
    model = tiny_model(root)
    data, ids = _dataset(root / "ds")
    _, tok, ip = load_model_and_processor(model)
    return data, ids, tok, ip


def _stream(data: Path, tok, ip, **over) -> tuple[set[str], dict[str, set[str]]]:
    renderer = Renderer(tok, ip, "qwen2_vl", DataConfig(**CFG, **over))
    trained: set[str] = set()
    excluded: dict[str, set[str]] = {}
    for item in SFTStream(ShardStream(shard_files(data)), renderer):
        if isinstance(item, Excluded):
            excluded.setdefault(item.reason, set()).add(item.record_id)
        else:
            trained.add(item.sample_id)
    return trained, excluded


def test_sft_skips_noise_negatives_by_default(env):
    data, ids, tok, ip = env
    trained, excluded = _stream(data, tok, ip)
    assert not trained & ids["negative"]
    assert excluded["negative"] == ids["negative"]
    assert ids["plain"] <= trained


def test_sft_includes_negatives_only_when_asked(env):
    data, ids, tok, ip = env
    trained, excluded = _stream(data, tok, ip, include_negatives=True)
    assert ids["negative"] <= trained and "negative" not in excluded


def test_sft_never_trains_on_a_recovery_mistake_but_keeps_its_later_steps(env):
    data, ids, tok, ip = env
    for include in (False, True):  # including negatives does not bring mistakes back
        trained, excluded = _stream(data, tok, ip, include_negatives=include)
        assert "recovery:1" not in trained
        assert excluded["not_train_target"] == ids["mistake"]
        assert ids["recovery_targets"] <= trained
    # The step after the mistake still sees it in its history (that is what it recovers from).
    after = next(s for s in ShardStream(shard_files(data)) if getattr(s, "id", "") == "recovery:2")
    assert "Tap the wrong tab" in after.history


def test_exclusions_are_counted_in_batches_and_an_all_negative_dataset_is_an_error(env, tmp_path):
    data, ids, tok, ip = env
    renderer = Renderer(tok, ip, "qwen2_vl", DataConfig(**CFG))
    items = list(SFTStream(ShardStream(shard_files(data)), renderer))
    batch = collate(items, tok.pad_token_id, 5)
    assert batch.excluded == {"negative": len(ids["negative"]), "not_train_target": 1}
    assert batch.n_items == len(items) and batch.size == len(items) - len(ids["negative"]) - 1

    # A shard of nothing but negatives: a clear error naming why, not an endless loop over empty epochs.
    store = BlobStore(tmp_path / "blobs")
    t = factories.trajectory(store, n_steps=2, seed=3)
    t = t.model_copy(update={"lineage": t.lineage.model_copy(update={"negative": True})})
    write_parquet(list(samples_from_trajectory(t, store.get)), tmp_path / "neg" / "p.parquet", "sample")
    cfg = TrainConfig()
    cfg.data = DataConfig(**CFG)
    batches = sft_batches(cfg, shard_files(tmp_path / "neg"), renderer, tok, 5, 0, 0)
    with pytest.raises(ValueError, match=r"no trainable rows.*2 negative"):
        for _, b in batches:
            assert b.size == 0


def test_grpo_pool_has_no_negative_or_mistake_as_ground_truth(env, tmp_path):
    data, ids, _, _ = env
    cfg = TrainConfig()
    pool = {s.id for s in load_pool(cfg, shard_files(data), RejectsLog(tmp_path), 1000)}
    assert pool == ids["plain"] | ids["recovery_targets"]
    cfg.data.include_negatives = True
    pool = {s.id for s in load_pool(cfg, shard_files(data), RejectsLog(tmp_path), 1000)}
    assert pool == ids["plain"] | ids["recovery_targets"] | ids["negative"]


def test_exclusion_reasons():
    store = None
    t = factories.trajectory(store, n_steps=2, seed=1)
    s0, s1 = samples_from_trajectory(t)
    assert exclusion(s0) is None
    neg = s0.model_copy(update={"lineage": s0.lineage.model_copy(update={"negative": True})})
    assert exclusion(neg) == "negative" and exclusion(neg, include_negatives=True) is None
    assert exclusion(s1.model_copy(update={"train_target": False}), include_negatives=True) == "not_train_target"
