"""A small corpus for interop tests and benchmarks: every action type on the platform it belongs to.

Three trajectories (Android phone, web, desktop) cover all 15 action types with and without target boxes, a
box too thin for a quantized point to land strictly inside, typing that submits, a recovery step that is
context only (``train_target`` False) and one noise-injected negative copy. ``curated_shard`` writes the same
steps as a curated dataset version would (``Sample`` rows with embedded PNGs). Screenshots are drawn, never
downloaded. The benchmarks import this module, so it must stay importable outside pytest.
"""

from __future__ import annotations

from pathlib import Path

from schemas import Action, BBox, BlobStore, DeviceProfile, Lineage, Observation, Sample, Step, Task, Trajectory
from schemas.base import stable_id
from schemas.recordio import write_parquet
from schemas.sample import samples_from_trajectory
from tests.factories import png_bytes

SIZES = {"android": (540, 1200), "web": (1280, 720), "desktop": (1920, 1080)}


def _obs(store: BlobStore, platform: str, seed: int) -> Observation:
    w, h = SIZES[platform]
    sha = store.put(png_bytes(w, h, seed))
    return Observation(id=stable_id("interop-obs", platform, seed), screenshot_sha256=sha, width=w, height=h,
                       device=DeviceProfile(name=platform, width=w, height=h,
                                            kind="phone" if platform == "android" else "desktop"),
                       platform=platform, app_id=f"{platform}-app")


def _box(x1: float, y1: float, x2: float, y2: float) -> BBox:
    return BBox(x1=x1, y1=y1, x2=x2, y2=y2)


def _actions(platform: str) -> list[tuple[Action, str]]:
    w, h = SIZES[platform]
    pt = {"image_width": w, "image_height": h}
    if platform == "android":
        return [
            (Action(type="open_app", app="Clock"), "Open the Clock app"),
            (Action(type="click", x=270, y=300, target_bbox=_box(200, 260, 340, 340), **pt), "Tap Alarm"),
            (Action(type="long_press", x=100, y=900, target_bbox=_box(20, 860, 180, 940), **pt),
             "Long-press the 7:00 alarm"),
            (Action(type="type", text="Wake up", x=270, y=500, **pt), "Type the label"),
            (Action(type="swipe", x=270, y=900, x2=270, y2=300, **pt), "Swipe up the list"),
            (Action(type="scroll", direction="down"), "Scroll down"),
            (Action(type="key", key="enter"), "Press Enter"),
            (Action(type="wait", duration_ms=2000), "Wait for the list"),
            (Action(type="navigate_back"), "Go back"),
            (Action(type="navigate_home"), "Go home"),
            (Action(type="answer", text="Two alarms are set"), "Answer the question"),
            (Action(type="done", text="success"), "Finish"),
        ]
    if platform == "web":
        return [
            (Action(type="click", x=640, y=80, target_bbox=_box(560, 60, 720, 100), **pt), "Click Search"),
            (Action(type="type", text="blue shoes\n", x=640, y=80, target_bbox=_box(560, 60, 720, 100), **pt),
             "Type the query and submit"),
            (Action(type="select", text="Price: low to high", x=1100, y=150, target_bbox=_box(1000, 135, 1200, 165),
                    **pt), "Sort by price"),
            (Action(type="hover", x=200, y=30, **pt), "Hover the menu"),
            (Action(type="scroll", direction="up", x=640, y=400, **pt), "Scroll the results up"),
            (Action(type="key", key="ctrl+a"), "Select all"),
            (Action(type="navigate_back"), "Go back"),
            (Action(type="done", text="success"), "Finish"),
        ]
    return [
        (Action(type="click", clicks=2, x=300, y=200, target_bbox=_box(260, 170, 340, 230), **pt),
         "Double-click the folder"),
        (Action(type="click", button="right", x=960, y=540, **pt), "Open the context menu"),
        (Action(type="click", clicks=3, x=800, y=600, target_bbox=_box(600, 590, 1000, 610), **pt),
         "Select the paragraph"),
        (Action(type="drag", x=400, y=300, x2=900, y2=700, **pt), "Drag the file to the trash"),
        (Action(type="click", x=1000.5, y=500, target_bbox=_box(999.6, 480, 1001.4, 520), **pt),
         "Click the thin splitter"),
        (Action(type="scroll", direction="down", x=960, y=700, **pt), "Scroll the document"),
        (Action(type="key", key="ctrl+s"), "Save"),
        (Action(type="done", text="success"), "Finish"),
    ]


def _nudged(a: Action) -> list[Action]:
    """An equally correct alternative one pixel to the right (what synthesis records as an accepted action)."""
    return [Action.model_validate({**a.model_dump(exclude={"x_norm", "y_norm"}), "x": (a.x or 0) + 1})]


def trajectory(store: BlobStore, platform: str, negative: bool = False) -> Trajectory:
    steps = []
    for i, (action, instruction) in enumerate(_actions(platform)):
        steps.append(Step(index=i, observation=_obs(store, platform, i), action=action, instruction=instruction,
                          reasoning=None if i % 4 == 3 else f"Step {i}: {instruction.lower()} moves toward the goal.",
                          accepted_actions=_nudged(action) if action.target_bbox is not None and i == 1 else []))
    if platform == "desktop":  # a recovery: the right-click was a mistake kept as context for the next step
        steps[1] = steps[1].model_copy(update={"train_target": False})
    tid = stable_id("interop", platform, negative)
    return Trajectory(id=tid, task=Task(id=stable_id("interop-task", platform), instruction=f"A {platform} task",
                                        app_id=f"{platform}-app"),
                      steps=steps, app_id=f"{platform}-app", platform=platform,
                      lineage=Lineage(source="crawl", negative=negative, source_ids=[tid]))


def corpus(store: BlobStore) -> list[Trajectory]:
    return [trajectory(store, p) for p in SIZES] + [trajectory(store, "web", negative=True)]


def write_trajectories(root: Path) -> tuple[Path, list[Trajectory]]:
    """``root/trajectories/part-00000.parquet`` + ``root/blobs``, as an import or synthesis run leaves them."""
    store = BlobStore(root / "blobs")
    trajs = corpus(store)
    write_parquet(trajs, root / "trajectories" / "part-00000.parquet", "trajectory")
    return root, trajs


def curated_shard(root: Path) -> tuple[Path, list[Sample]]:
    """``root/DATASET/v0001/data/shard-00000-of-00001.parquet``: Sample rows with embedded screenshots."""
    store = BlobStore(root / "staging-blobs")
    samples = [s for t in corpus(store) for s in samples_from_trajectory(t, store.get)]
    dataset = root / "dataset"
    write_parquet(samples, dataset / "v0001" / "data" / "shard-00000-of-00001.parquet", "sample")
    return dataset, samples
