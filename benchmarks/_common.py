"""Shared by the benchmarks: the row every ``bench_*.rows()`` returns, timing, the cluster.

A row is a dict with the keys ``metric, ours, baseline, ratio, target, verdict`` (units in
the metric's name; ``verdict`` is ``ok`` or ``over``). Every figure is measured against its
baseline in the same run, interleaved (alternating which goes first, after a warm-up round)
under the same conditions (the same file state, the same state of memory), and reported as
the median of the repeats, because the machine is shared and its load changes from one
second to the next.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

KEYS = ("metric", "ours", "baseline", "ratio", "target", "verdict")


class Skipped(Exception):
    """A benchmark that cannot run here (the cluster is down, a module is missing)."""


def row(metric: str, ours: float, baseline: float, *, target: str, ok: bool,
        digits: int = 3) -> dict[str, Any]:
    """One result row; ``ok`` is the target's test, decided by the caller."""
    ratio = ours / baseline if baseline else float("inf")
    return {"metric": metric, "ours": round(ours, digits), "baseline": round(baseline, digits),
            "ratio": round(ratio, 3), "target": target, "verdict": "ok" if ok else "over"}


def at_most_more(metric: str, ours: float, baseline: float, limit: float, unit: str,
                 digits: int = 3) -> dict[str, Any]:
    """A row whose target is an absolute overhead: ``ours - baseline <= limit``."""
    return row(metric, ours, baseline, target=f"<= +{limit:g} {unit}",
               ok=ours - baseline <= limit, digits=digits)


def at_most_times(metric: str, ours: float, baseline: float, limit: float,
                  digits: int = 3) -> dict[str, Any]:
    """A row whose target is a ratio: ``ours / baseline <= limit``."""
    return row(metric, ours, baseline, target=f"<= {limit:g}x",
               ok=baseline > 0 and ours / baseline <= limit, digits=digits)


def interleaved(repeat: int, *actions: Callable[[], float], warmup: int = 1) -> list[float]:
    """The medians of :func:`interleaved_samples`."""
    return [statistics.median(values) for values in
            interleaved_samples(repeat, *actions, warmup=warmup)]


def interleaved_samples(repeat: int, *actions: Callable[[], float], warmup: int = 1
                        ) -> list[list[float]]:
    """Run the actions in turn ``repeat`` times (each returns its own measure); each one's.

    Interleaving makes ours and the baseline see the same machine load. Every other round
    runs them in the reverse order, so that no side always runs right after the same other
    one (and gets the memory, page cache or scheduler tick it left behind); the
    ``warmup`` rounds first are not counted (imports, byte code, first use of memory)."""
    samples: list[list[float]] = [[] for _ in actions]
    for round_index in range(warmup + repeat):
        order = list(enumerate(actions))
        if round_index % 2:
            order.reverse()
        for index, action in order:
            value = action()
            if round_index >= warmup:
                samples[index].append(value)
    return samples


def spread(values: list[float], scale: float = 1.0, digits: int = 1) -> str:
    """The middle half of ``values`` (25th to 75th percentile), for a row on a busy machine."""
    low, _, high = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
    return f"{low * scale:.{digits}f}-{high * scale:.{digits}f}"


def load_average() -> str:
    """The 1-minute load average now, as a row says it (the machine is shared)."""
    return f"{os.getloadavg()[0]:.1f}"


def timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


COUNTING_WRAPPER = """#!/bin/sh
echo "$(basename "$0")" >> "$HPC_MAGICS_BENCH_COUNTS"
exec {real} "$@"
"""


def counting_wrappers(folder: Path, commands: tuple[str, ...] = ("squeue", "sacct")) -> None:
    """In a new ``folder`` (put it first on PATH), scripts named as ``commands`` that append
    their name to the caller's ``HPC_MAGICS_BENCH_COUNTS`` file, then run the real one."""
    folder.mkdir(mode=0o755)
    for command in commands:
        real = shutil.which(command)
        if real is None:
            raise Skipped(f"{command} is not on PATH")
        wrapper = folder / command
        wrapper.write_text(COUNTING_WRAPPER.format(real=real))
        wrapper.chmod(0o755)


def cluster_up() -> bool:
    """Is the Slurm test cluster answering (``sinfo`` lists a responding node)?"""
    if shutil.which("sinfo") is None:
        return False
    try:
        done = subprocess.run(["sinfo", "-h", "-r", "-o", "%N"], capture_output=True,
                              text=True, timeout=15, check=False)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0 and bool(done.stdout.strip())


def slurm_release() -> str:
    """The release of the Slurm commands on PATH ("22.05.8"), or "none" without Slurm."""
    for command in ("sinfo", "scontrol"):
        if shutil.which(command) is None:
            continue
        try:
            done = subprocess.run([command, "--version"], capture_output=True, text=True,
                                  timeout=15, check=False)
        except subprocess.TimeoutExpired:
            continue
        words = done.stdout.split()  # "slurm 22.05.8"
        if done.returncode == 0 and len(words) == 2 and words[0].startswith("slurm"):
            return words[1]
    return "none"


def require_cluster() -> None:
    if not cluster_up():
        raise Skipped("the Slurm test cluster is down (start it: scripts/slurm-cluster up)")


def repeat_count(default: int) -> int:
    """``HPC_MAGICS_BENCH_REPEAT`` overrides the repeats (more on a busy machine)."""
    return int(os.environ.get("HPC_MAGICS_BENCH_REPEAT", default))


@contextlib.contextmanager
def work_dir(prefix: str) -> Iterator[Path]:
    """A fresh folder for a benchmark's job folders, and the working directory meanwhile:
    in ``HPC_MAGICS_BENCH_DIR``, else in the user's home, which compute nodes see. Never the
    system's /tmp: on a cluster with hosts apart (a ``--release`` test cluster, a real site)
    each node has its own, and hpc_magics rightly refuses job folders there."""
    base = Path(os.environ.get("HPC_MAGICS_BENCH_DIR")
                or Path.home() / ".cache" / "hpc-magics" / "benchmarks")
    base.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield folder
    finally:
        os.chdir(before)
        shutil.rmtree(folder, ignore_errors=True)
