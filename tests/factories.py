"""Builders of small, valid records for tests: real PNG screenshots in a real blob store, no fixtures on disk."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from PIL import Image, ImageDraw

from schemas import (
    Action,
    BBox,
    BlobStore,
    DeviceProfile,
    Element,
    Lineage,
    Observation,
    Step,
    Task,
    Trajectory,
)
from schemas.base import stable_id


def png_bytes(width: int = 1280, height: int = 720, seed: int = 0) -> bytes:
    """A screenshot-like PNG: a header bar, a few buttons; ``seed`` moves things so images differ."""
    img = Image.new("RGB", (width, height), (245, 245, 245))
    d = ImageDraw.Draw(img)
    d.rectangle((0, 0, width, 60), fill=(30 + seed % 200, 90, 160))
    for i in range(4):
        top = 100 + i * 120 + (seed * 7) % 40
        d.rectangle((40, top, width // 2, top + 80), fill=(200, 200 - i * 30, 220), outline=(0, 0, 0))
        d.text((60, top + 30), f"Item {i} / {seed}", fill=(0, 0, 0))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return buf.getvalue()


def element(eid: str = "btn-save", text: str = "Save", box: tuple[float, float, float, float] = (40, 100, 240, 180)):
    return Element(id=eid, role="button", class_name="BUTTON", text=text, bbox=BBox(x1=box[0], y1=box[1],
                   x2=box[2], y2=box[3]), clickable=True)


def observation(store: BlobStore | None = None, seed: int = 0, width: int = 1280, height: int = 720) -> Observation:
    data = png_bytes(width, height, seed)
    sha = store.put(data) if store is not None else __import__("hashlib").sha256(data).hexdigest()
    return Observation(
        id=stable_id("obs", seed, width, height),
        screenshot_sha256=sha,
        width=width,
        height=height,
        device=DeviceProfile(name="desktop", width=width, height=height, kind="desktop"),
        platform="web",
        app_id="demo-notes",
        app_version="1.0",
        location=f"http://127.0.0.1/notes/{seed}",
        elements=[element(), element("link-home", "Home", (0, 0, 120, 60))],
        exact_hash=stable_id("exact", seed),
        structural_hash=stable_id("struct", seed % 3),
        timestamp=datetime(2026, 11, 30, 12, 0, seed % 60, tzinfo=UTC),
    )


def click(width: int = 1280, height: int = 720, x: float = 140, y: float = 140) -> Action:
    return Action(type="click", x=x, y=y, image_width=width, image_height=height,
                  target_element_id="btn-save", target_bbox=BBox(x1=40, y1=100, x2=240, y2=180))


def trajectory(store: BlobStore | None = None, n_steps: int = 2, seed: int = 0, tid: str | None = None) -> Trajectory:
    steps = []
    for i in range(n_steps):
        obs = observation(store, seed * 100 + i)
        action = click() if i < n_steps - 1 else Action(type="type", text="milk and eggs", x=140, y=140,
                                                          image_width=1280, image_height=720)
        steps.append(Step(index=i, observation=obs, action=action, instruction=f"Do step {i}",
                          reasoning=f"The screen shows the list; step {i} moves toward the goal.",
                          accepted_actions=[click(x=150, y=150)] if i == 0 else []))
    return Trajectory(
        id=tid or stable_id("traj", seed),
        task=Task(id=stable_id("task", seed), instruction="Add a note about groceries", app_id="demo-notes"),
        steps=steps,
        app_id="demo-notes",
        app_version="1.0",
        platform="web",
        scores={"judge": 4.0},
        lineage=Lineage(crawl_run="run-1", device="desktop", synthesizer_model="rules", prompt_version="v1"),
    )
