"""Full curation pipeline: whole trajectories kept on the demo run, throughput vs the image-decoding floor, and
peak memory at two corpus sizes.

What is compared, on one streamed corpus (``tests.corpus.stream_bench_corpus``: N trajectories of ``--steps``
steps over a bounded pool of ``--pool`` 1280x720 screenshots, with planted exact copies and bad records):

- **floor**: a single-process loop that only reads, decodes and hashes (pHash + 1024-bit dHash, the same
  ``filters.screenshot.inspect_blob``) the screenshots the records reference, each distinct screenshot once —
  the image work curation cannot avoid. Records/s = records in the corpus / loop seconds.
- **curate (direct)**, **curate (2 workers)** and **curate (dask)**: ``pipelines.curation.pipeline.curate`` end
  to end (Beam pipeline, shards with embedded images, rejects, expectations, manifest, card), in-process, on
  Beam's multi-process runner and on a ``dask.distributed`` ``LocalCluster`` of ``--workers`` worker processes
  (``--runner dask``; the cluster is started before the clock). Floor and runs alternate, ``--rounds`` times, and
  each ratio is the median of (run ÷ the floor measured just before it), so load changes favour neither.
- **peak RSS** of an in-process curate run at the small and the large size, each in a fresh subprocess.
- **the demo run** (``--demo DIR``, default ``demo-output`` of ``trajforge demo``): its synthesized trajectories
  curated again with this code; ``yield_whole_trajectories`` = replay-verified trajectories kept whole ÷
  replay-verified trajectories in, ``holes`` = kept trajectories missing a step in the shards.

Every measurement runs in a fresh subprocess so imports, caches and allocator state do not leak between them.
Prints ``BENCH yield_whole_trajectories``, ``BENCH holes``, ``BENCH curate_vs_floor``, ``BENCH curate_2w_vs_floor``
(curate records/s ÷ floor records/s; below 1 means slower than the floor), ``BENCH dask_identical`` (1 when the
dask run's data shards are byte-identical to the direct run's), ``BENCH dask_2w_vs_direct`` (dask records/s ÷
direct records/s) and ``BENCH rss_10x_vs_1x`` (peak RSS at ``--large`` ÷ at ``--small``) last. ``--profile``
prints where the driver's time goes (cProfile) for the direct and dask runs.

Usage: ``python benchmarks/bench_curate.py [--small 10000] [--large 100000] [--pool 1000] [--steps 2]
[--instruction-dedupe minhash] [--rounds 2] [--no-dask] [--profile] [--workdir DIR] [--demo DIR]``. On a
2-core machine the 100k run takes tens of
minutes; pass smaller sizes (keep the 10x ratio) and report what ran.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _peak_rss_mib() -> float:
    """This process's peak resident memory since it started its program. Linux's ``ru_maxrss`` survives
    fork and exec: a child of a parent that once held 750 MiB reported 750 MiB whatever it used itself (the
    bench printed ``rss_10x_vs_1x=1.000``). The address space's high-water mark (``VmHWM``) starts afresh at
    exec."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_floor(corpus: Path, blobs: Path) -> dict:
    """Decode and hash every distinct screenshot the corpus references, in record order (one process)."""
    from filters.screenshot import inspect_blob
    from schemas.blobstore import BlobStore

    refs: list[str] = []  # collected untimed: the floor measures image work only
    records = 0
    with corpus.open(encoding="utf-8") as f:
        for line in f:
            records += 1
            try:
                refs += [s["observation"]["screenshot_sha256"] for s in json.loads(line)["steps"]]
            except (ValueError, KeyError, TypeError):
                continue
    store = BlobStore(blobs)
    seen: set[str] = set()
    start = time.perf_counter()
    for sha in refs:
        if sha not in seen:
            seen.add(sha)
            inspect_blob(store, sha)
    seconds = time.perf_counter() - start
    return {"records": records, "refs": len(refs), "distinct": len(seen), "seconds": seconds,
            "rss_mib": _peak_rss_mib()}


def child_curate(corpus: Path, blobs: Path, out: Path, runner: str, workers: int, dedupe: str,
                 profile: str = "") -> dict:
    """One curate run. ``dask``: a ``LocalCluster`` of ``workers`` single-threaded worker processes is started
    first (not timed: a cluster outlives runs), and the run goes through ``--runner dask``."""
    import contextlib

    from pipelines.curation.config import CurateConfig
    from pipelines.curation.pipeline import curate

    with contextlib.ExitStack() as stack:
        extra: dict = {}
        if runner == "dask":
            from distributed import Client, LocalCluster

            cluster = stack.enter_context(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                                       dashboard_address=None, silence_logs=40))
            with Client(cluster) as client:  # workers import the project before the clock starts
                client.run(importlib_all)
            extra = {"dask_address": cluster.scheduler_address}
        cfg = CurateConfig(inputs=[corpus], out=out, blobs=str(blobs), runner=runner, workers=workers,
                           instruction_dedupe=dedupe, **extra)
        prof = None
        if profile:
            import cProfile

            prof = cProfile.Profile()
            prof.enable()
        start = time.perf_counter()
        result = curate(cfg)
        seconds = time.perf_counter() - start
        if prof is not None:
            prof.disable()
            prof.dump_stats(profile)
    m = result.manifest
    return {"records": m["totals"]["records_in"], "seconds": seconds, "rss_mib": _peak_rss_mib(),
            "children_rss_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
            "totals": m["totals"], "funnel": {s["stage"]: s["reasons"] for s in m["stages"] if s["reasons"]}}


def importlib_all() -> None:
    """What a worker imports to run curation (so the first task does not pay for it)."""
    import importlib

    importlib.import_module("pipelines.curation.stages")


VERIFIED = ("replayed", "human")


def child_demo(demo: Path, out: Path) -> dict:
    """Curate the demo's synthesized trajectories (default settings) and count whole verified trajectories."""
    import pyarrow.parquet as pq

    from pipelines.curation.config import CurateConfig
    from pipelines.curation.pipeline import curate

    src = demo / "synth" / "trajectories.parquet"
    blobs = next(iter(sorted(demo.glob("graph/*/blobs"))), demo / "graph" / "blobs")
    verified_in = sum(v in VERIFIED for v in pq.read_table(src, columns=["verification"]).column(0).to_pylist())
    m = curate(CurateConfig(inputs=[src], out=out, blobs=str(blobs), rows_per_shard=500)).manifest
    rows = pq.read_table(out / m["version"] / "data",
                         columns=["trajectory_id", "step_index", "num_steps", "verification"]).to_pylist()
    steps: dict[str, set[int]] = {}
    for r in rows:
        steps.setdefault(r["trajectory_id"], set()).add(r["step_index"])
    whole_verified = {r["trajectory_id"] for r in rows if r["verification"] in VERIFIED
                      and steps[r["trajectory_id"]] == set(range(r["num_steps"]))}
    return {"records": m["totals"]["records_in"], "verified_in": verified_in,
            "kept_whole_verified": len(whole_verified),
            "holes": m["totals"]["trajectories_with_holes"], "totals": m["totals"],
            "funnel": {s["stage"]: s["reasons"] for s in m["stages"] if s["reasons"]}}


def run_child(args: list[str], timeout: float) -> dict:
    """One measurement in a fresh interpreter; its last stdout line is the JSON result."""
    proc = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"child {args[:1]} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", type=int, default=10_000, help="records for throughput and the small RSS run")
    ap.add_argument("--large", type=int, default=100_000, help="records for the large RSS run")
    ap.add_argument("--pool", type=int, default=1000, help="distinct screenshots the records share")
    ap.add_argument("--steps", type=int, default=2, help="steps per trajectory")
    ap.add_argument("--instruction-dedupe", default="minhash", help="minhash | minilm | off (see README)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--workdir", type=Path, default=None, help="keep the corpus here (reused between runs)")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds allowed per measurement")
    ap.add_argument("--demo", type=Path, default=ROOT / "demo-output", help="a `trajforge demo` output directory")
    ap.add_argument("--rounds", type=int, default=2, help="floor/run rounds (interleaved; medians reported)")
    ap.add_argument("--no-dask", action="store_true", help="skip the dask runs (dask_* not measured)")
    ap.add_argument("--profile", action="store_true", help="cProfile each run's driver and print the top")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()

    if a.child:
        kind, corpus, blobs, *rest = a.child
        if kind == "demo":
            res = child_demo(Path(corpus), Path(blobs))
        elif kind == "floor":
            res = child_floor(Path(corpus), Path(blobs))
        else:
            out, runner, workers, dedupe, *profile = rest
            res = child_curate(Path(corpus), Path(blobs), Path(out), runner, int(workers), dedupe, *profile)
        print(json.dumps(res))
        return

    from schemas.fileio import file_sha256
    from tests.corpus import stream_bench_corpus

    work = a.workdir or Path(tempfile.mkdtemp(prefix="bench-curate-"))
    demo = None
    if (a.demo / "synth" / "trajectories.parquet").is_file():
        shutil.rmtree(work / "out-demo", ignore_errors=True)
        demo = run_child(["demo", str(a.demo), str(work / "out-demo")], a.timeout)
        print(f"demo run ({a.demo}): {demo['records']} trajectories, {demo['verified_in']} replay-verified; kept "
              f"whole {demo['kept_whole_verified']} of them, {demo['holes']} with holes; rejects {demo['funnel']}",
              flush=True)
    else:
        print(f"no demo run at {a.demo} (run `trajforge demo` first): yield and holes not measured", flush=True)
    t = time.perf_counter()
    small = stream_bench_corpus(work, a.small, pool_size=a.pool, steps=a.steps)
    large = stream_bench_corpus(work, a.large, pool_size=a.pool, steps=a.steps)
    print(f"corpus: {small.records} and {large.records} records ({a.steps} steps each, {a.pool} shared "
          f"1280x720 screenshots, {large.exact_copies} exact copies and {large.bad_records} bad records planted "
          f"in the large one) written in {time.perf_counter() - t:.0f} s under {work}", flush=True)
    blobs = str(small.blobs)

    def curate_run(corpus: Path, runner: str, keep: bool = False) -> dict:
        out = work / f"out-{corpus.stem}-{runner}"
        shutil.rmtree(out, ignore_errors=True)
        profile = [str(work / f"profile-{runner}.pstats")] if a.profile else []
        try:
            res = run_child(["curate", str(corpus), blobs, str(out), runner, str(a.workers), a.instruction_dedupe,
                             *profile], a.timeout)
        finally:
            if not keep:
                shutil.rmtree(out, ignore_errors=True)
        res["out"] = out
        return res

    def shards(out: Path) -> dict[str, str]:  # digests: the shards' bytes would swell this process for good
        return {p.name: file_sha256(p) for p in sorted(out.glob("v*/data/*.parquet"))}

    # Floor and runs interleaved, round after round, so that a change of load favours neither; each ratio is
    # the median over rounds of (run records/s ÷ the floor measured just before it).
    ratios: dict[str, list[float]] = {"direct": [], "multiprocess": [], "dask": []}
    identical = 1
    direct: dict = {}
    for r in range(a.rounds):
        for runner in ("direct", "multiprocess", "dask"):
            if runner == "dask" and a.no_dask:
                continue
            floor = run_child(["floor", str(small.path), blobs], a.timeout)
            floor_rps = floor["records"] / floor["seconds"]
            res = curate_run(small.path, runner, keep=runner in ("direct", "dask"))
            rps = res["records"] / res["seconds"]
            ratios[runner].append(rps / floor_rps)
            print(f"round {r + 1}: floor {floor['distinct']} distinct of {floor['refs']} screenshots in "
                  f"{floor['seconds']:.1f} s → {floor_rps:.1f} records/s; curate {runner} ({a.workers} workers "
                  f"unless direct), {res['records']} records: {res['seconds']:.1f} s → {rps:.1f} records/s "
                  f"({rps / floor_rps:.2f}× the floor), peak RSS {res['rss_mib']:.0f} MiB"
                  + (f"; kept {res['totals']['samples_kept']} of {res['totals']['samples_in']} samples; rejects "
                     f"{res['funnel']}" if r == 0 and runner == "direct" else ""), flush=True)
            if runner == "direct":
                direct = res
            if runner == "dask":
                same = shards(direct["out"]) == shards(res["out"]) and bool(shards(res["out"]))
                identical = min(identical, int(same))
                ratios.setdefault("dask_vs_direct", []).append(
                    (res["records"] / res["seconds"]) / (direct["records"] / direct["seconds"]))
                shutil.rmtree(res["out"], ignore_errors=True)
        shutil.rmtree(direct["out"], ignore_errors=True)
    big = curate_run(large.path, "direct")
    print(f"curate direct, {big['records']} records: {big['seconds']:.1f} s → {big['records'] / big['seconds']:.1f}"
          f" records/s, peak RSS {big['rss_mib']:.0f} MiB (small run: {direct['rss_mib']:.0f} MiB)", flush=True)
    if a.profile:
        import pstats

        for runner in ("direct", "dask"):
            path = work / f"profile-{runner}.pstats"
            if path.is_file():
                print(f"--- where the time goes: {runner} (driver process; cumulative, top 25) ---")
                pstats.Stats(str(path)).sort_stats("cumulative").print_stats(25)
    if a.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
    steps = small.records * a.steps
    print(f"sizes run: small={small.records} large={large.records} records (ratio {large.records / small.records:.1f})"
          f", {steps} steps in the throughput input; {a.rounds} round(s); medians below")
    if demo is not None:
        print(f"BENCH yield_whole_trajectories={demo['kept_whole_verified'] / max(1, demo['verified_in']):.3f}")
        print(f"BENCH holes={demo['holes']}")
    print(f"BENCH curate_vs_floor={statistics.median(ratios['direct']):.3f}")
    print(f"BENCH curate_2w_vs_floor={statistics.median(ratios['multiprocess']):.3f}")
    if not a.no_dask:
        print(f"BENCH dask_identical={identical}")
        print(f"BENCH dask_2w_vs_direct={statistics.median(ratios['dask_vs_direct']):.3f}")
    print(f"BENCH rss_10x_vs_1x={big['rss_mib'] / direct['rss_mib']:.3f}")


if __name__ == "__main__":
    main()
