"""Content-addressed storage for screenshots and raw UI trees.

A blob's name is the sha256 of its bytes, so the same screenshot captured twice is stored once, a reference
can be checked against the bytes it names, and concurrent writers of the same blob cannot conflict. Writes go
to a temporary name and are renamed into place, so a crash never leaves a truncated blob under a valid
name. The root is a local directory by default or any fsspec URL (``s3://bucket/blobs``, ``gs://…``) for a
device farm whose workers write to shared storage.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import fsspec

from schemas.base import SHA256_RE
from schemas.fileio import OutputError, write_bytes_atomic


class BlobNotFound(KeyError):
    """No blob with this digest is stored."""


class BlobCorrupt(ValueError):
    """The stored bytes do not hash to the name they are stored under."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _check_digest(digest: str) -> str:
    # Digests arrive from records and URLs: anything but 64 hex chars could be a path traversal.
    if not isinstance(digest, str) or not SHA256_RE.match(digest):
        raise ValueError(f"not a sha256 digest: {digest!r}")
    return digest


class BlobStore:
    """Blobs under ``<root>/<first two hex chars>/<digest>``."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = str(root)
        self.fs, self._base = fsspec.core.url_to_fs(self.root)
        self.local = self.fs.protocol in ("file", ("file", "local")) or "file" in self.fs.protocol
        if self.local:
            base = Path(self._base)
            try:
                if base.is_symlink() and not base.exists():
                    raise OutputError("use the blob store", base, "a symbolic link to nowhere or to itself (a loop)")
                base.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise OutputError("use the blob store", exc.filename or base, exc) from None

    def _path(self, digest: str) -> str:
        _check_digest(digest)
        return f"{self._base.rstrip('/')}/{digest[:2]}/{digest}"

    def put(self, data: bytes) -> str:
        """Store bytes; returns their sha256. Storing the same bytes again is a cheap no-op.

        A store that cannot be written raises ``OutputError`` (a run-level failure, not a bad record).
        """
        digest = sha256_bytes(data)
        try:
            return self._put(digest, data)
        except OSError as exc:
            raise OutputError("write to the blob store", exc.filename or self.root, exc) from None

    def _put(self, digest: str, data: bytes) -> str:
        path = self._path(digest)
        if self.fs.exists(path):
            return digest
        if self.local:
            write_bytes_atomic(path, data)
        else:
            # Object stores make a single PUT visible atomically; the temp name guards filesystems like HDFS.
            tmp = f"{path}.{uuid.uuid4().hex}.tmp"
            with self.fs.open(tmp, "wb") as f:
                f.write(data)
            self.fs.mv(tmp, path)
        return digest

    def get(self, digest: str, verify: bool = True) -> bytes:
        """The bytes stored under ``digest``; with ``verify`` the hash is checked so corruption surfaces."""
        path = self._path(digest)
        try:
            with self.fs.open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise BlobNotFound(digest) from None
        if verify and sha256_bytes(data) != digest:
            raise BlobCorrupt(f"blob {digest} is corrupt: its bytes hash to {sha256_bytes(data)}")
        return data

    def exists(self, digest: str) -> bool:
        return self.fs.exists(self._path(digest))

    def local_path(self, digest: str) -> Path:
        """Filesystem path of a blob in a local store (for exporters that reference image files)."""
        if not self.local:
            raise ValueError(f"{self.root} is not a local store")
        return Path(self._path(digest))

    def __iter__(self) -> Iterator[str]:
        """Every stored digest (temporary files of interrupted writes are skipped)."""
        for path in self.fs.find(self._base):
            name = path.rsplit("/", 1)[-1]
            if SHA256_RE.match(name):
                yield name

    def delete(self, digest: str) -> None:
        """Remove a blob (retention: only for digests no dataset version references)."""
        path = self._path(digest)
        if self.fs.exists(path):
            self.fs.rm(path)
