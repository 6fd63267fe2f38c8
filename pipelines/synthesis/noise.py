"""Noise injection for trajectory priors: corrupted copies of good trajectories, labelled with what is wrong.

A critic or process-reward model needs negatives that look like real mistakes, with the faulty step known.
Each kind corrupts exactly one step ``k`` of a copy and records ``scores["noisy_step"] = k`` and
``scores["noise_<kind>"] = 1``; the lineage source becomes ``noise:<kind>`` so such records can never be
mistaken for demonstrations:

- ``stale_element``: the action targets an element of the *previous* screen that this screen no longer has;
- ``moved_element``: the tap lands outside its target's box (the element moved, the action did not);
- ``extra_popup``: an unexpected dialog element covers the target on this step's screen;
- ``missing_step``: step k is deleted (the trajectory skips a needed action);
- ``wrong_label``: the step's instruction names a different element than the one acted on.
"""

from __future__ import annotations

import random

from schemas import Action, ActionType, BBox, Element, Trajectory
from schemas.base import stable_id

KINDS = ("stale_element", "moved_element", "extra_popup", "missing_step", "wrong_label")
POINTED = {ActionType.CLICK, ActionType.LONG_PRESS}


def _pointed_steps(traj: Trajectory) -> list[int]:
    return [s.index for s in traj.steps if ActionType(s.action.type) in POINTED and s.action.target_bbox is not None]


def _relabel(traj: Trajectory, kind: str, k: int, steps: list) -> Trajectory:
    steps = [s.model_copy(update={"index": i}) for i, s in enumerate(steps)]
    return traj.model_copy(update={
        "id": stable_id("noise", traj.id, kind, k),
        "steps": steps,
        "verification": "unverified",
        "scores": {**traj.scores, f"noise_{kind}": 1.0, "noisy_step": float(k)},
        "lineage": traj.lineage.model_copy(update={"source": f"noise:{kind}"}),
    })


def inject(traj: Trajectory, kind: str, rng: random.Random) -> Trajectory | None:
    """One corrupted copy of ``traj`` (None when this kind does not apply to it)."""
    steps = list(traj.steps)
    pointed = _pointed_steps(traj)
    if kind == "missing_step":
        if len(steps) < 2:
            return None
        k = rng.randrange(len(steps) - 1)  # never the last step: the task would simply be shorter
        return _relabel(traj, kind, k, steps[:k] + steps[k + 1:])
    if not pointed:
        return None
    k = rng.choice(pointed)
    s = steps[k]
    obs, a = s.observation, s.action
    assert a.target_bbox is not None
    if kind == "moved_element":
        b = a.target_bbox
        x = b.x2 + 40 if b.x2 + 40 <= obs.width else max(0.0, b.x1 - 40)
        moved = Action.model_validate({**a.model_dump(exclude={"x_norm", "y_norm"}), "x": x})
        steps[k] = s.model_copy(update={"action": moved, "accepted_actions": []})
    elif kind == "stale_element":
        if k == 0:
            return None
        prev = steps[k - 1].observation
        gone = [e for e in prev.elements if e.clickable and obs.element(e.id) is None and e.bbox.within(obs.width,
                                                                                                         obs.height)]
        if not gone:
            return None
        e = rng.choice(gone)
        x, y = e.bbox.center
        stale = Action(type=a.type, x=x, y=y, image_width=obs.width, image_height=obs.height,
                       target_element_id=e.id, target_bbox=e.bbox)
        steps[k] = s.model_copy(update={"action": stale, "accepted_actions": []})
    elif kind == "extra_popup":
        b = a.target_bbox
        popup = Element(id=stable_id("popup", traj.id, k), role="dialog", text="Rate this app!",
                        bbox=BBox(x1=max(0.0, b.x1 - 10), y1=max(0.0, b.y1 - 10), x2=min(float(obs.width), b.x2 + 10),
                                  y2=min(float(obs.height), b.y2 + 10)), visible=True)
        steps[k] = s.model_copy(update={"observation": obs.model_copy(update={"elements": [*obs.elements, popup]})})
    elif kind == "wrong_label":
        target = obs.element(a.target_element_id) if a.target_element_id else None
        others = [e for e in obs.elements if e.clickable and e.label and (target is None or e.id != target.id)]
        if target is None or not target.label or not others or target.label not in s.instruction:
            return None
        steps[k] = s.model_copy(update={"instruction": s.instruction.replace(target.label, rng.choice(others).label)})
    else:
        raise ValueError(f"unknown noise kind {kind!r} (known: {', '.join(KINDS)})")
    return _relabel(traj, kind, k, steps)


def noisy_copies(trajs: list[Trajectory], kinds: tuple[str, ...] = KINDS, seed: int = 0) -> list[Trajectory]:
    """Every applicable kind once per trajectory, deterministically for a seed."""
    out = []
    for t in trajs:
        rng = random.Random(f"{seed}:{t.id}")
        for kind in kinds:
            noisy = inject(t, kind, rng)
            if noisy is not None:
                out.append(noisy)
    return out
