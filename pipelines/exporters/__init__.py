"""Exporters from trajforge trajectory shards to the formats other trainers read.

GUI-Libra SFT / RL records come from ``schemas.exporters.guilibra`` (reused, not re-implemented); this package
adds AGUVIS-style conversations and a plain JSONL + images folder, plus the runner that streams shards,
copies the referenced screenshots out of the blob store and writes rejects for what cannot be exported.
"""
