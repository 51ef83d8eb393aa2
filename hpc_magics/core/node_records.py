"""What the node side records about its own job, and how the notebook reads it. Pure.

Each task writes ``node-JOB.HOST.RANK.json`` (``node/usage_recorder.py``): its cgroup's
memory limit at the start (a job killed for memory still leaves it) and its peak at the
end, by the cgroup and by ``getrusage``: accounting samples every 30 s or so, so a shorter
job has no MaxRSS but these. The first task on each node also samples the job's memory
(``mem-JOB.HOST.csv``) and, where it has GPUs and ``nvidia-smi``, the GPUs
(``gpu-JOB.HOST.csv``) every few seconds, for the widget's plots and ``%hpc_efficiency``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any, NamedTuple

GPU_SAMPLE_EVERY_S = 5
# What the node asks nvidia-smi for, in this order (csv, noheader, nounits).
GPU_QUERY = "timestamp,index,utilization.gpu,memory.used,memory.total"
MEMORY_SAMPLE_EVERY_S = 2  # one small file read and one line written
MB = 1024 * 1024
# the files each cgroup version keeps the limit, the peak and the usage now in (for the
# job's directory)
CGROUP_FILES = {
    "v1": {"limit": "memory.limit_in_bytes", "peak": "memory.max_usage_in_bytes",
           "current": "memory.usage_in_bytes"},
    "v2": {"limit": "memory.max", "peak": "memory.peak", "current": "memory.current"},
}
# a cgroup v1 "no limit" is a huge page-rounded number, v2 says "max"
NO_LIMIT_BYTES = 1 << 60
# the sources of a peak, best first, with how the report names them
PEAK_SOURCES = {
    "cgroup_peak_mb": "the job's cgroup on the node",
    "rusage_peak_mb": "getrusage on the node (the largest process)",
}
# A job step the kernel ended for memory leaves the job itself FAILED (its batch script
# exits with srun's code; sacct: "123|FAILED", "123.0|OUT_OF_MEMORY"): a step's state
# that says why the job failed, in the order they are told
STEP_STATES_THAT_EXPLAIN = ("OUT_OF_MEMORY",)


def node_file(job_id: str, host: str, rank: str) -> str:
    return f"node-{job_id}.{host}.{rank}.json"


def node_samples_file(job_id: str, host: str) -> str:
    """One node's GPU samples of ``job_id``: every node of a multi-node job samples its own."""
    return f"gpu-{job_id}.{host}.csv"


def memory_samples_file(job_id: str, host: str) -> str:
    """One node's memory samples of ``job_id`` (``epoch seconds,MB now,MB peak`` lines)."""
    return f"mem-{job_id}.{host}.csv"


class MemorySample(NamedTuple):
    at: float  # epoch seconds
    megabytes: float  # now
    peak_mb: float  # the largest sampled since the job started on the node


def parse_memory_samples(text: str) -> tuple[MemorySample, ...]:
    """The samples of each whole line; a line cut short is skipped."""
    samples = []
    for line in text.splitlines():
        try:
            samples.append(MemorySample(*map(float, line.split(","))))
        except (ValueError, TypeError):
            continue
    return tuple(samples)


def memory_cgroup_dir(proc_cgroup: str, exists: Callable[[str], bool]) -> tuple[str, str] | None:
    """The job's (``job_N``) memory cgroup directory and version from ``/proc/self/cgroup``,
    or ``None``. A node in a container may see its hierarchy from below its root (``/outer/
    slurm_c1/.../job_5`` mounted as ``slurm_c1/...``): the longest existing tail is taken."""
    for line in proc_cgroup.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3:
            continue
        if "memory" in parts[1].split(","):
            version, mount = "v1", "/sys/fs/cgroup/memory"
        elif parts[0] == "0" and parts[1] == "":
            version, mount = "v2", "/sys/fs/cgroup"
        else:
            continue
        path = PurePosixPath(parts[2]).parts[1:]
        jobs = [i for i, part in enumerate(path) if part.startswith("job_")]
        if not jobs:
            continue
        path = path[:jobs[-1] + 1]
        for start in range(len(path)):
            candidate = "/".join((mount, *path[start:]))
            if exists(candidate):
                return candidate, version
    return None


def bytes_value(text: str) -> int | None:
    """A cgroup file's number; ``None`` for "max", a v1 "no limit" or garbage."""
    value = text.strip()
    return int(value) if value.isdigit() and int(value) < NO_LIMIT_BYTES else None


class NodePeak(NamedTuple):
    """The best peak the node records give for one job: megabytes and where it is from."""

    megabytes: float
    source: str


def read_records(texts: Iterable[str]) -> list[dict[str, Any]]:
    records = []
    for text in texts:
        try:
            record = json.loads(text)
        except ValueError:
            continue  # a record cut short when the kernel ended the task
        if isinstance(record, dict):
            records.append(record)
    return records


def node_peak(records: Iterable[Mapping[str, Any]]) -> NodePeak | None:
    """The largest peak on any node, by the best source any record has (the cgroup
    peak counts the whole job on a node, like accounting's per-node request)."""
    records = list(records)
    for key, source in PEAK_SOURCES.items():
        values = [float(r[key]) for r in records if isinstance(r.get(key), (int, float))]
        if values:
            return NodePeak(max(values), source)
    return None


def memory_limit_mb(records: Iterable[Mapping[str, Any]]) -> float | None:
    limits = [float(r["limit_mb"]) for r in records if isinstance(r.get("limit_mb"), (int, float))]
    return min(limits) if limits else None


def explaining_step_state(job_state: str, steps: str) -> str:
    """The state to tell for a FAILED job: a step's that says why (``sacct -n -P -o
    JobID,State`` lines of its steps), else the job's own."""
    if job_state != "FAILED":
        return job_state
    said = {line.partition("|")[2].split()[0] for line in steps.splitlines()
            if "." in line.partition("|")[0] and line.partition("|")[2].strip()}
    return next((state for state in STEP_STATES_THAT_EXPLAIN if state in said), job_state)

