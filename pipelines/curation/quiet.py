"""Keep third-party chatter off the console of a curation run, without changing logging for the caller.

Three libraries talk on every run: Beam warns "apitools not found" through the *root* logger when it is
imported (and that call installs a root handler via ``logging.basicConfig``, which then lets every INFO
record of other libraries through), great-expectations forces its docs-site logger to INFO and announces a
temporary directory, and transformers draws a "Loading weights" bar when the embedding model loads. Each is
silenced only inside trajforge's own calls: levels and bars are restored on exit, so a user who imports
these libraries in their own code keeps the behaviour they configured.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

BEAM_IMPORT_NOISE = ("apitools not found",)
GE_DOCS_LOGGER = "great_expectations.data_context.types.base"


class _DropMessages(logging.Filter):
    def __init__(self, fragments: tuple[str, ...]):
        super().__init__()
        self.fragments = fragments

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(f in str(record.msg) for f in self.fragments)


def import_beam_quietly() -> None:
    """Import apache_beam with its import-time root-logger warning dropped and no root handler left behind."""
    import sys

    if "apache_beam" in sys.modules:
        return
    root = logging.getLogger()
    placeholder = logging.NullHandler() if not root.handlers else None
    drop = _DropMessages(BEAM_IMPORT_NOISE)
    if placeholder is not None:
        root.addHandler(placeholder)  # so logging.warning() does not call basicConfig()
    root.addFilter(drop)
    try:
        import apache_beam  # noqa: F401
    finally:
        root.removeFilter(drop)
        if placeholder is not None:
            root.removeHandler(placeholder)


@contextlib.contextmanager
def lowered_levels(levels: dict[str, int]) -> Iterator[None]:
    """Set the named loggers to (at least) the given levels for the block, then restore what they had."""
    saved = {name: logging.getLogger(name).level for name in levels}
    for name, level in levels.items():
        logger = logging.getLogger(name)
        logger.setLevel(max(level, logger.level))
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def no_hf_progress_bars() -> Iterator[None]:
    """Hide transformers' progress bars (the "Loading weights" bar) for the block, then restore them."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - transformers is a declared dependency
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()
