"""The node side's own facts about its job, in the job folder (``core/node_records.py``):
the memory limit at the start, the peak at the end, and GPU and memory samples on every
node of the job (by the first task on each node).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.node_records import (
    CGROUP_FILES,
    GPU_QUERY,
    GPU_SAMPLE_EVERY_S,
    MB,
    MEMORY_SAMPLE_EVERY_S,
    bytes_value,
    memory_cgroup_dir,
    memory_samples_file,
    node_file,
    node_samples_file,
)
from ..jobfolder.files import write_atomically

STOP_SAMPLER_S = 5.0


def attempt_id() -> str:
    """This job's id as Slurm names it (``123``, or ``123_4`` for an array task)."""
    array = os.environ.get("SLURM_ARRAY_JOB_ID")
    task = os.environ.get("SLURM_ARRAY_TASK_ID")
    return f"{array}_{task}" if array and task else os.environ.get("SLURM_JOB_ID", "local")


def _node() -> str:
    """Slurm's name for this node (unique in the job even where nodes share a hostname)."""
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def _cgroup_mb(which: str) -> float | None:
    try:
        found = memory_cgroup_dir(Path("/proc/self/cgroup").read_text(), os.path.isdir)
        if found is None:
            return None
        directory, version = found
        value = bytes_value(Path(directory, CGROUP_FILES[version][which]).read_text())
    except OSError:
        return None
    return None if value is None else value / MB


def _write(folder: Path, record: dict[str, Any]) -> None:
    host = _node()
    rank = os.environ.get("SLURM_PROCID", "0")
    with contextlib.suppress(OSError):  # a fact the report can do without: never fail the job
        write_atomically(folder / node_file(attempt_id(), host, rank), json.dumps(
            {"host": host, "hostname": socket.gethostname(), "rank": rank, **record}))


def record_start(folder: Path) -> None:
    _write(folder, {"limit_mb": _cgroup_mb("limit")})


def record_end(folder: Path) -> None:
    # ru_maxrss is in kilobytes on Linux
    rusage = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                 resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    peak = _cgroup_mb("peak")
    _write(folder, {"limit_mb": _cgroup_mb("limit"), "rusage_peak_mb": rusage,
                    **({} if peak is None else {"cgroup_peak_mb": peak})})


def start_gpu_sampler(folder: Path) -> subprocess.Popen[bytes] | None:
    """``nvidia-smi`` in the background, by the first task of a node with GPUs; else None."""
    devices = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    if not devices or os.environ.get("SLURM_LOCALID", "0") != "0":
        return None
    target = folder / node_samples_file(attempt_id(), _node())
    argv = ["nvidia-smi", f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits",
            "-l", str(GPU_SAMPLE_EVERY_S), "-i", devices]
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    except OSError:
        return None
    try:  # runs until stop_gpu_sampler (no timeout: it lives as long as the task)
        return subprocess.Popen(argv, stdout=fd, stderr=subprocess.DEVNULL,  # noqa: S603
                                stdin=subprocess.DEVNULL)
    except OSError:  # no nvidia-smi on this node: no samples, as documented
        with contextlib.suppress(OSError):
            os.unlink(target)
        return None
    finally:
        os.close(fd)


def _current_mb() -> float | None:
    """The job's memory on this node now: its cgroup's usage, else this task's resident size."""
    if (current := _cgroup_mb("current")) is not None:
        return current
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / MB


def start_memory_sampler(folder: Path) -> threading.Event | None:
    """A thread appending ``epoch s,MB now,MB peak`` lines until the event returned is set."""
    if os.environ.get("SLURM_LOCALID", "0") != "0":
        return None
    target = folder / memory_samples_file(attempt_id(), _node())
    stop = threading.Event()

    def sample() -> None:
        with contextlib.suppress(OSError):  # a plot the widget can do without: never fail the job
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            with os.fdopen(fd, "a", encoding="ascii") as out:
                peak = 0.0  # the whole run's, in every line: the widget reads only the end
                while True:
                    if (megabytes := _current_mb()) is not None:
                        peak = max(peak, megabytes)
                        out.write(f"{time.time():.0f},{megabytes:.0f},{peak:.0f}\n")
                        out.flush()  # the widget reads it while the job runs
                    if stop.wait(MEMORY_SAMPLE_EVERY_S):
                        return

    threading.Thread(target=sample, name="hpc-magics-memory-samples", daemon=True).start()
    return stop


def stop_gpu_sampler(sampler: subprocess.Popen[bytes] | None) -> None:
    if sampler is None:
        return
    sampler.terminate()
    try:
        sampler.wait(timeout=STOP_SAMPLER_S)
    except subprocess.TimeoutExpired:
        sampler.kill()
        sampler.wait(timeout=STOP_SAMPLER_S)


@contextlib.contextmanager
def recorded(folder: Path) -> Iterator[None]:
    """Around the node-side run of a job: its facts recorded, GPUs sampled."""
    record_start(folder)
    sampler = start_gpu_sampler(folder)
    memory = start_memory_sampler(folder)
    try:
        yield
    finally:
        if memory is not None:
            memory.set()
        stop_gpu_sampler(sampler)
        record_end(folder)

