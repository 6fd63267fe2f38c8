"""Accepted-action sets: every graph edge from the same state to the same next state is also correct.

Step-wise rewards suffer from partial verifiability when only the demonstrated action counts. The graph
knows better: a second button with the same effect, or the same link tapped elsewhere in its box, reached
the same state. Alternatives recorded on another capture of the state are re-anchored onto this step's
screenshot through their target element (the centre of that element's box here), so every accepted action
is executable on the image the step shows; an alternative whose element is not on this screen is skipped.
"""

from __future__ import annotations

from pipelines.synthesis.graph_input import AppGraph
from pipelines.synthesis.paths import path_edge
from schemas import Action, ActionType, Observation, Transition

POINTED = {ActionType.CLICK, ActionType.LONG_PRESS}


def _identity(a: Action) -> tuple[object, ...]:
    return (a.type, a.target_element_id, a.text, a.key, a.direction, a.app)


def reanchor(alt: Action, obs: Observation) -> Action | None:
    """``alt`` expressed on ``obs``'s pixels, or None when its target is not on that screen."""
    if ActionType(alt.type) not in POINTED and alt.point is None:
        return alt
    if alt.target_element_id is None:
        same = alt.image_width == obs.width and alt.image_height == obs.height
        return alt if same else None
    el = obs.element(alt.target_element_id)
    if el is None:
        return None
    x, y = el.bbox.center
    data = alt.model_dump(exclude={"x_norm", "y_norm", "x2", "y2", "x2_norm", "y2_norm"})
    data.update(x=x, y=y, image_width=obs.width, image_height=obs.height, target_bbox=el.bbox.model_dump())
    return Action.model_validate(data)


def accepted_actions(graph: AppGraph, edge: Transition, obs: Observation) -> list[Action]:
    """Alternatives to ``edge`` on the step's observation ``obs`` (the demonstrated action excluded)."""
    seen = {_identity(edge.action)}
    out: list[Action] = []
    for alt in graph.parallel_edges(edge):
        key = _identity(alt.action)
        if key in seen or not path_edge(alt):  # a back's target depends on history, not on this screen
            continue
        action = alt.action if alt.from_observation_id == obs.id else reanchor(alt.action, obs)
        if action is not None:
            seen.add(key)
            out.append(action)
    return out
