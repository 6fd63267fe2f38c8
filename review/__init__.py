"""Human review of curated samples: an annotator web UI, labels in a real database, and the human gate.

Automatic filters catch most bad samples, not all. Annotators see a step the way the agent saw it (screenshot,
action overlay, instruction, reasoning), accept, reject or fix it, and their verdicts flow back into curation:
``gate.apply_labels`` turns one dataset version plus the label database into the next version.

Modules, one concept each: ``db`` (tables, append-only labels), ``auth`` (passwords, sessions, CSRF),
``dataset`` (index over the Parquet shards), ``queue`` (review orderings), ``overlay`` (action → shapes),
``agreement`` (inter-annotator statistics), ``labels`` (reading the audit trail), ``export`` (label files),
``gate`` (next dataset version) and ``app`` (the FastAPI web app).
"""
