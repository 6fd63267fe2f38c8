"""Curation: trajectories → validated, deduplicated, quality-gated, redacted Parquet shards in a versioned
dataset directory, with every refused record in a rejects output (see ``pipeline.curate``)."""
