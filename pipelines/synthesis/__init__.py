"""Synthesis: turn an app's UI state-transition graph into (task, trajectory) training records.

Reverse synthesis in the OS-Genesis sense, made graph-aware: paths are sampled from the whole graph
(``paths``), every step is described by a backend (``backends``: offline rules, an OpenAI-compatible server,
an in-process transformers VLM) through versioned prompts (``prompts``), outputs are parsed and validated
(``parse``), calls are cached by content (``cache``), steps get accepted-action sets from parallel graph
edges and trajectories are replayed on a device (``verify``), and ``runner`` wires it together for the
``trajforge synth`` command. ``beam_pipeline`` runs the same phases as a Beam pipeline for scale, its model
calls going through RunInference (``beam_inference``: a ``ModelHandler`` over any backend, cache first).
Only ``graph_input`` knows how the explorers lay a graph out on disk.
"""
