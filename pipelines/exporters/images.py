"""Copying screenshots out of the blob store into an export's ``images/`` folder, once each."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from schemas import BlobStore

MAGIC = ((b"\x89PNG", "png"), (b"\xff\xd8", "jpg"), (b"RIFF", "webp"), (b"GIF8", "gif"))


def extension(data: bytes) -> str:
    return next((ext for magic, ext in MAGIC if data.startswith(magic)), "bin")


class ImageFolder:
    """``ref(sha256)`` copies the blob to ``<out>/images/<sha256>.<ext>`` and returns that relative path.

    Raises ``schemas.blobstore.BlobNotFound`` / ``BlobCorrupt`` when the blob is missing or damaged, so the
    exporter can reject the trajectory instead of writing a sample that points at nothing.
    """

    def __init__(self, out: Path, blobs: BlobStore, folder: str = "images"):
        self.out, self.blobs, self.folder = out, blobs, folder
        self.dir = out / folder
        self.dir.mkdir(parents=True, exist_ok=True)
        self.known: dict[str, str] = {}
        self.copied = 0

    def ref(self, sha256: str) -> str:
        if sha256 in self.known:
            return self.known[sha256]
        data = self.blobs.get(sha256)
        name = f"{sha256}.{extension(data)}"
        target = self.dir / name
        if not target.exists():
            fd, tmp = tempfile.mkstemp(prefix=f".{sha256[:8]}.", dir=self.dir)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
            self.copied += 1
        rel = f"{self.folder}/{name}"
        self.known[sha256] = rel
        return rel
