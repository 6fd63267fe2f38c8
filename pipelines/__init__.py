"""Pipelines: the Beam pipelines that wire filters (and synthesis at scale) together, and the CLI entry points."""
