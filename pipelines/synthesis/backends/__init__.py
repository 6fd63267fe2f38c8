"""Synthesis backends behind one interface (``base.Backend``): offline rules, OpenAI-compatible, transformers."""

from __future__ import annotations

from pipelines.synthesis.backends.base import Backend, BackendUnavailable, Completion, Failure, Result

__all__ = ["Backend", "BackendUnavailable", "Completion", "Failure", "Result"]
