"""Content-addressed screenshot storage: dedup by content, atomic writes, verified reads, no path tricks."""

from __future__ import annotations

import hashlib

import pytest

from schemas.blobstore import BlobCorrupt, BlobNotFound, BlobStore
from schemas.fileio import OutputError


def test_put_is_content_addressed_and_idempotent(tmp_path):
    store = BlobStore(tmp_path / "blobs")
    data = b"\x89PNG fake screenshot"
    digest = store.put(data)
    assert digest == hashlib.sha256(data).hexdigest()
    assert store.put(data) == digest
    assert store.get(digest) == data
    assert list(store) == [digest]
    assert store.local_path(digest).parent.name == digest[:2]


def test_missing_and_corrupt_blobs_are_reported(tmp_path):
    store = BlobStore(tmp_path / "blobs")
    with pytest.raises(BlobNotFound):
        store.get("0" * 64)
    digest = store.put(b"original")
    store.local_path(digest).write_bytes(b"tampered")
    with pytest.raises(BlobCorrupt, match=digest):
        store.get(digest)


@pytest.mark.parametrize("bad", ["../../etc/passwd", "ABC", "0" * 63, "g" * 64])
def test_digest_must_be_hex_sha256(tmp_path, bad):
    store = BlobStore(tmp_path / "blobs")
    with pytest.raises(ValueError, match="sha256"):
        store.get(bad)


def test_interrupted_write_leaves_no_blob(tmp_path, monkeypatch):
    store = BlobStore(tmp_path / "blobs")
    import schemas.blobstore as mod

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(mod.os, "replace", boom)
    with pytest.raises(OutputError, match="disk full"):  # a run-level error naming the store, not a bad record
        store.put(b"half written")
    monkeypatch.undo()
    assert list(store) == []
    assert not any(p.suffix == ".tmp" for p in (tmp_path / "blobs").rglob("*"))


def test_fsspec_url_backend(tmp_path):
    # memory:// exercises the non-local (object store) path of the same code.
    store = BlobStore("memory://trajforge-test/blobs")
    digest = store.put(b"remote bytes")
    assert store.exists(digest)
    assert store.get(digest) == b"remote bytes"
    assert digest in list(store)
    store.delete(digest)
    assert not store.exists(digest)
