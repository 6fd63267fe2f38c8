"""Noise injection for trajectory priors: corrupted copies of good trajectories, labelled with what is wrong.

A critic or process-reward model needs negatives that look like real mistakes, with the faulty step known.
Each kind corrupts exactly one step ``k`` of a copy and records ``scores["noisy_step"] = k`` and
``scores["noise_<kind>"] = 1``; the lineage source becomes ``noise:<kind>`` and ``lineage.negative`` is set
(schema 1.2), the fence trainers check, so such records can never be mistaken for demonstrations:

- ``stale_element``: the action targets an element of the *previous* screen that this screen no longer has;
- ``moved_element``: the tap lands outside its target's box (the element moved, the action did not);
- ``extra_popup``: an unexpected dialog covers the target on this step's screen — drawn into the screenshot
  (a new blob) as well as added to the element list, so pixels and elements agree;
- ``missing_step``: step k is deleted (the trajectory skips a needed action);
- ``wrong_label``: the step's instruction names a different element than the one acted on.
"""

from __future__ import annotations

import hashlib
import io
import random

from PIL import Image, ImageDraw

from schemas import Action, ActionType, BBox, BlobStore, Element, Trajectory
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
        "lineage": traj.lineage.model_copy(update={"source": f"noise:{kind}", "negative": True}),
    })


TERMINAL = {ActionType.DONE, ActionType.ANSWER}
POPUP_TEXT = "Rate this app!"


def draw_popup(png: bytes, box: BBox) -> bytes:
    """The screenshot with a dialog drawn over ``box``: a bordered card with a title and a dismiss button."""
    img = Image.open(io.BytesIO(png)).convert("RGB")
    d = ImageDraw.Draw(img)
    x1, y1, x2, y2 = (int(v) for v in box.as_tuple())
    d.rectangle((x1, y1, x2, y2), fill=(255, 255, 255), outline=(60, 60, 60), width=2)
    d.text((x1 + 8, y1 + 6), POPUP_TEXT, fill=(20, 20, 20))
    d.text((x1 + 8, max(y1 + 6, y2 - 18)), "Not now", fill=(30, 90, 200))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def inject(traj: Trajectory, kind: str, rng: random.Random, store: BlobStore | None = None) -> Trajectory | None:
    """One corrupted copy of ``traj`` (None when this kind does not apply to it).

    ``store`` is where the pop-up screenshot is written; without one ``extra_popup`` does not apply (a pop-up in
    the element list that the pixels do not show would teach a mismatch).
    """
    steps = list(traj.steps)
    pointed = _pointed_steps(traj)
    acting = [i for i, s in enumerate(steps) if ActionType(s.action.type) not in TERMINAL]
    if kind == "missing_step":
        if len(acting) < 2:
            return None
        k = rng.choice(acting[:-1])  # never the last action (the task would simply be shorter) nor the terminal
        return _relabel(traj, kind, k, steps[:k] + steps[k + 1:])
    if kind == "stale_element":
        pointed = [i for i in pointed if i > 0]  # it needs a previous screen whose element went stale
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
        if store is None:
            return None
        b = a.target_bbox
        box = BBox(x1=max(0.0, b.x1 - 10), y1=max(0.0, b.y1 - 10), x2=min(float(obs.width), b.x2 + 10),
                   y2=min(float(obs.height), b.y2 + 10))
        popup = Element(id=stable_id("popup", traj.id, k), role="dialog", text=POPUP_TEXT, bbox=box, visible=True)
        png = draw_popup(store.get(obs.screenshot_sha256), box)
        sha = store.put(png)
        assert sha == hashlib.sha256(png).hexdigest()
        noisy_obs = obs.model_copy(update={"id": stable_id("popup-obs", obs.id, k), "screenshot_sha256": sha,
                                           "elements": [*obs.elements, popup]})
        steps[k] = s.model_copy(update={"observation": noisy_obs})
    elif kind == "wrong_label":
        target = obs.element(a.target_element_id) if a.target_element_id else None
        others = [e for e in obs.elements if e.clickable and e.label and (target is None or e.id != target.id)]
        if target is None or not target.label or not others or target.label not in s.instruction:
            return None
        steps[k] = s.model_copy(update={"instruction": s.instruction.replace(target.label, rng.choice(others).label)})
    else:
        raise ValueError(f"unknown noise kind {kind!r} (known: {', '.join(KINDS)})")
    return _relabel(traj, kind, k, steps)


def noisy_copies(trajs: list[Trajectory], kinds: tuple[str, ...] = KINDS, seed: int = 0,
                 store: BlobStore | None = None) -> list[Trajectory]:
    """Every applicable kind once per trajectory, deterministically for a seed."""
    out = []
    for t in trajs:
        rng = random.Random(f"{seed}:{t.id}")
        for kind in kinds:
            noisy = inject(t, kind, rng, store)
            if noisy is not None:
                out.append(noisy)
    return out
