"""Curation: trajectories → validated, deduplicated, quality-gated, redacted Parquet shards in a versioned
dataset directory, with every refused record in a rejects output (see ``pipeline.curate``)."""

from pipelines.curation.quiet import import_beam_quietly

import_beam_quietly()  # every curation module imports Beam; do it once without its import-time warning
