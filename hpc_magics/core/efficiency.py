"""How a job used what it asked for, from ``sacct`` text and its GPU samples. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .jobs import normalize_state
from .units import slurm_int, slurm_seconds

# One sacct call (``sacct -n -P -o USAGE_FIELDS -j IDS``, steps included: MaxRSS is a
# step's figure) gives states and usage alike.
# The name goes last: a "|" inside it survives the split.
USAGE_FIELDS = ("JobID", "State", "Submit", "ExitCode", "Elapsed", "Timelimit", "TotalCPU",
                "MaxRSS", "ReqMem", "AllocCPUS", "AllocTRES", "NodeList", "JobName")

_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)([cn]?)$", re.IGNORECASE)
_MB = {"": 1 / 1024 / 1024, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 ** 2,
       "P": 1024.0 ** 3}


def sacct_megabytes(text: str, cpus: int = 1, nodes: int = 1) -> float | None:
    """MB of ``312340K``, ``1.5G``, ``4000Mc`` (per CPU, older Slurm), ``4Gn`` (per node).

    sacct prints MaxRSS in kilobytes-with-suffix and a bare number as bytes.
    """
    match = _MEMORY.match(text.strip())
    if not match:
        return None
    number, unit, per = match.groups()
    megabytes = float(number) * (_MB[unit.upper()] if unit else _MB[""])
    if per.lower() == "c":
        megabytes *= max(1, cpus)
    elif per.lower() == "n":
        megabytes *= max(1, nodes)
    return megabytes


def tres(text: str) -> dict[str, str]:
    """``billing=1,cpu=4,gres/gpu=2,mem=8G,node=1`` as a dict."""
    pairs = (item.partition("=") for item in text.split(",") if "=" in item)
    return {key.strip(): value.strip() for key, _, value in pairs}


@dataclass(frozen=True)
class Usage:
    """What accounting says one job (or array task) used, its steps folded in."""

    job_id: str
    state: str
    exit_code: str = ""
    elapsed_s: float | None = None
    time_limit_s: float | None = None
    total_cpu_s: float | None = None
    max_rss_mb: float | None = None  # the largest step's peak (one task's, on one node)
    req_mem_mb: float | None = None  # per node
    alloc_cpus: int | None = None
    gpus: int = 0
    nodes: int = 1
    node_list: str = ""
    name: str = ""
    # slurmdbd's placeholder for a job whose start it has not recorded yet (named
    # "allocation", no time limit, ReqMem garbage), seen for ~1 s after a short job ends
    provisional: bool = False

    @property
    def final(self) -> bool:
        from .jobs import is_final

        return is_final(self.state)

    @property
    def cpu_efficiency(self) -> float | None:
        """CPU time used / CPU time allocated (elapsed x CPUs)."""
        if not self.elapsed_s or not self.alloc_cpus or self.total_cpu_s is None:
            return None
        return self.total_cpu_s / (self.elapsed_s * self.alloc_cpus)

    @property
    def memory_fraction(self) -> float | None:
        if not self.req_mem_mb or self.max_rss_mb is None:
            return None
        return self.max_rss_mb / self.req_mem_mb

    @property
    def time_fraction(self) -> float | None:
        if not self.time_limit_s or self.elapsed_s is None:
            return None
        return self.elapsed_s / self.time_limit_s

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


def parse_usage(text: str) -> tuple[Usage, ...]:
    """Jobs and array tasks from ``sacct -n -P -o USAGE_FIELDS``, each with its steps
    (``123.batch``, ``123_4.0``) folded in: the largest MaxRSS, their CPU time when the
    job line has none. Malformed lines are skipped."""
    jobs: dict[str, Usage] = {}
    steps: dict[str, list[list[str]]] = {}
    for line in text.splitlines():
        parts = line.strip().split("|", len(USAGE_FIELDS) - 1)
        if len(parts) != len(USAGE_FIELDS) or not parts[0] or not parts[1]:
            continue
        job_id = parts[0]
        if "." in job_id:
            steps.setdefault(job_id.split(".", 1)[0], []).append(parts)
            continue
        row = dict(zip(USAGE_FIELDS, parts, strict=True))
        allocated = tres(row["AllocTRES"])
        cpus = slurm_int(row["AllocCPUS"]) or slurm_int(allocated.get("cpu", ""))
        nodes = slurm_int(allocated.get("node", "")) or 1
        jobs[job_id] = Usage(
            job_id=job_id, state=normalize_state(row["State"]), exit_code=row["ExitCode"],
            elapsed_s=slurm_seconds(row["Elapsed"]),
            time_limit_s=slurm_seconds(row["Timelimit"]),
            total_cpu_s=slurm_seconds(row["TotalCPU"]),
            max_rss_mb=sacct_megabytes(row["MaxRSS"]) if row["MaxRSS"] else None,
            req_mem_mb=sacct_megabytes(row["ReqMem"], cpus or 1, 1) if row["ReqMem"] else None,
            alloc_cpus=cpus, gpus=slurm_int(allocated.get("gres/gpu", "")) or 0, nodes=nodes,
            node_list=row["NodeList"], name=row["JobName"],
            provisional=not row["Timelimit"].strip())
    for job_id, rows in steps.items():
        if job_id not in jobs:
            continue
        rss = [m for m in (sacct_megabytes(r[USAGE_FIELDS.index("MaxRSS")]) for r in rows
                           if r[USAGE_FIELDS.index("MaxRSS")]) if m is not None]
        cpu = [c for c in (slurm_seconds(r[USAGE_FIELDS.index("TotalCPU")]) for r in rows)
               if c is not None]
        job = jobs[job_id]
        jobs[job_id] = replace(
            job, max_rss_mb=max([*rss, *([job.max_rss_mb] if job.max_rss_mb else [])])
            if rss else job.max_rss_mb,
            total_cpu_s=job.total_cpu_s if job.total_cpu_s else (sum(cpu) if cpu else None))
    return tuple(jobs.values())


# ------------------------------------------------------------------ GPU samples
@dataclass(frozen=True)
class GpuSample:
    seconds: float  # since the first sample
    index: str
    utilisation: float  # percent
    memory_used_mb: float
    memory_total_mb: float


def parse_gpu_samples(text: str) -> tuple[GpuSample, ...]:
    """``nvidia-smi --query-gpu=GPU_QUERY --format=csv,noheader,nounits`` lines (the query
    is ``node_records.GPU_QUERY``); a line cut short by the job's end (or "[N/A]" values)
    is skipped."""
    import datetime as dt

    samples: list[GpuSample] = []
    first: float | None = None
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 5:
            continue
        try:
            stamp = dt.datetime.strptime(parts[0].split(".")[0], "%Y/%m/%d %H:%M:%S").timestamp()
            values = [float(p) for p in parts[2:]]
        except ValueError:
            continue
        first = stamp if first is None else first
        samples.append(GpuSample(stamp - first, parts[1], *values))
    return tuple(samples)


@dataclass(frozen=True)
class GpuSummary:
    gpus: int
    mean_utilisation: float  # percent, over all samples of all GPUs
    peak_memory_mb: float
    memory_total_mb: float
    samples: int

    @classmethod
    def of(cls, samples: Iterable[GpuSample]) -> GpuSummary | None:
        samples = tuple(samples)
        if not samples:
            return None
        return cls(gpus=len({s.index for s in samples}),
                   mean_utilisation=sum(s.utilisation for s in samples) / len(samples),
                   peak_memory_mb=max(s.memory_used_mb for s in samples),
                   memory_total_mb=max(s.memory_total_mb for s in samples),
                   samples=len(samples))
