"""``schemas.fileio``: a failed write leaves the old file and no temporary behind; names never collide."""

from __future__ import annotations

import json
import os

import pytest

from schemas.fileio import atomic_open, atomic_path, point_symlink, read_json, write_json_atomic


def test_a_write_that_fails_half_way_keeps_the_old_file_and_cleans_up(tmp_path):
    target = tmp_path / "manifest.json"
    write_json_atomic(target, {"version": 1})
    with pytest.raises(RuntimeError), atomic_open(target) as f:
        f.write('{"version": 2, "trunc')
        raise RuntimeError("killed mid-write")
    assert read_json(target) == {"version": 1}
    assert os.listdir(tmp_path) == ["manifest.json"]


def test_temporary_names_are_unique_and_hidden_while_writing(tmp_path):
    target = tmp_path / "shard.parquet"
    with atomic_path(target) as a, atomic_path(target) as b:
        assert a != b and a.parent == b.parent == tmp_path
        assert a.name.startswith(".") and b.name.startswith(".")
        a.write_bytes(b"first")
        b.write_bytes(b"second")
        assert not target.exists()
    assert target.read_bytes() == b"first"  # the outer writer finished last
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shard.parquet"]


def test_symlink_switch_replaces_the_pointer_atomically(tmp_path):
    (tmp_path / "v0001").mkdir()
    (tmp_path / "v0002").mkdir()
    link = tmp_path / "current"
    point_symlink(link, "v0001")
    point_symlink(link, "v0002")
    assert os.readlink(link) == "v0002"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current", "v0001", "v0002"]
    assert json.loads(json.dumps(read_json(tmp_path / "missing.json", {"d": 1}))) == {"d": 1}
