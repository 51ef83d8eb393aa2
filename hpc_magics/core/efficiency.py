"""How a job used what it asked for, from ``sacct`` text and its GPU samples, and its report:
the figures as short lines and one line of advice, the first rule in the ``order`` of
``efficiency_advice.toml`` that applies. Pure.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .jobs import is_final, normalize_state
from .units import format_duration, format_memory, slurm_int, slurm_seconds

if TYPE_CHECKING:
    from .profiles import Partition

# One sacct call (``sacct -n -P -o USAGE_FIELDS -j IDS``, steps included: MaxRSS is a
# step's figure) gives states and usage alike.
# The name goes last: a "|" inside it survives the split.
USAGE_FIELDS = ("JobID", "State", "Submit", "ExitCode", "Elapsed", "Timelimit", "TotalCPU",
                "MaxRSS", "ReqMem", "AllocCPUS", "AllocTRES", "NodeList", "JobName")

_MEMORY = re.compile(r"^(\d+(?:\.\d+)?)([KMGTP]?)([cn]?)$", re.IGNORECASE)
_MB = {"": 1 / 1024 / 1024, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 ** 2,
       "P": 1024.0 ** 3}


def sacct_megabytes(text: str, cpus: int = 1) -> float | None:
    """MB of ``312340K``, ``1.5G``, ``4000Mc`` (per CPU, older Slurm), ``4Gn`` (per node, as
    :class:`Usage` keeps it); a bare number is bytes."""
    match = _MEMORY.match(text.strip())
    if not match:
        return None
    number, unit, per = match.groups()
    return float(number) * _MB[unit.upper()] * (max(1, cpus) if per.lower() == "c" else 1)


def tres(text: str) -> dict[str, str]:
    """``billing=1,cpu=4,gres/gpu=2,mem=8G,node=1`` as a dict."""
    pairs = (item.partition("=") for item in text.split(",") if "=" in item)
    return {key.strip(): value.strip() for key, _, value in pairs}


def _ratio(part: float | None, whole: float | None) -> float | None:
    return None if not whole or part is None else part / whole


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
    submitted: str = ""  # sacct's Submit, as it wrote it
    # slurmdbd's placeholder for a job whose start it has not recorded yet (named
    # "allocation", no time limit, ReqMem garbage), seen for ~1 s after a short job ends
    provisional: bool = False

    @property
    def final(self) -> bool:
        return is_final(self.state)

    @property
    def cpu_efficiency(self) -> float | None:
        """CPU time used / CPU time allocated (elapsed x CPUs)."""
        return _ratio(self.total_cpu_s, (self.elapsed_s or 0) * (self.alloc_cpus or 0))

    @property
    def memory_fraction(self) -> float | None:
        return _ratio(self.max_rss_mb, self.req_mem_mb)

    @property
    def time_fraction(self) -> float | None:
        return _ratio(self.elapsed_s, self.time_limit_s)

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
            max_rss_mb=sacct_megabytes(row["MaxRSS"]),
            req_mem_mb=sacct_megabytes(row["ReqMem"], cpus or 1),
            alloc_cpus=cpus, gpus=slurm_int(allocated.get("gres/gpu", "")) or 0, nodes=nodes,
            node_list=row["NodeList"], name=row["JobName"], submitted=row["Submit"],
            provisional=not row["Timelimit"].strip())
    rss_at, cpu_at = USAGE_FIELDS.index("MaxRSS"), USAGE_FIELDS.index("TotalCPU")
    for job_id, rows in steps.items():
        if (job := jobs.get(job_id)) is None:
            continue
        rss = [m for r in rows if (m := sacct_megabytes(r[rss_at])) is not None]
        cpu = [c for r in rows if (c := slurm_seconds(r[cpu_at])) is not None]
        jobs[job_id] = replace(
            job, max_rss_mb=max([*rss, job.max_rss_mb or 0]) if rss else job.max_rss_mb,
            total_cpu_s=job.total_cpu_s or (sum(cpu) if cpu else None))
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

    @classmethod
    def of(cls, samples: Iterable[GpuSample]) -> GpuSummary | None:
        samples = tuple(samples)
        if not samples:
            return None
        return cls(gpus=len({s.index for s in samples}),
                   mean_utilisation=sum(s.utilisation for s in samples) / len(samples),
                   peak_memory_mb=max(s.memory_used_mb for s in samples),
                   memory_total_mb=max(s.memory_total_mb for s in samples))


# ------------------------------------------------------------------ the report
ADVICE_FILE = Path(__file__).with_name("efficiency_advice.toml")


@dataclass(frozen=True)
class Report:
    usage: Usage
    lines: tuple[str, ...] = ()
    advice: str = ""


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.0f}%"


def memory_text(megabytes: float | None) -> str:
    return "n/a" if megabytes is None else (
        f"{megabytes / 1024:.1f}G" if megabytes >= 1024 else f"{megabytes:.0f}M")


def load_advice_rules() -> dict[str, Any]:
    from .profiles import read_toml  # not at import: the watcher imports Usage

    return read_toml(ADVICE_FILE, "advice file")


def advice(usage: Usage, gpu: GpuSummary | None, rules: Mapping[str, Any] | None = None,
           partition: Partition | None = None) -> str:
    """The first rule (in the data's ``order``) that applies, as one line; "" when none.
    ``partition``: where the job ran, when known (a rerun is never offered more than it has)."""
    rules = load_advice_rules() if rules is None else rules
    for name in rules.get("order", ()):
        rule = rules.get(name, {})
        text = _RULES[name](usage, gpu, rule, partition) if name in _RULES else None
        if text:
            return text
    return ""


def rerun_changes(usage: Usage, rules: Mapping[str, Any] | None = None,
                  partition: Partition | None = None) -> dict[str, str]:
    """The rerun a job that ended OUT_OF_MEMORY or TIMEOUT needs, as ``rerun`` takes it
    (``{"mem": "2G"}``, ``{"time": "2h"}``): the numbers the advice names, from the same
    rules, at most what ``partition`` has (a node's memory, its time limit: more would be
    refused); {} for any other end, when the job's request is not known, or when it
    already had the most the partition gives."""
    rules = load_advice_rules() if rules is None else rules
    if usage.state == "OUT_OF_MEMORY" and usage.req_mem_mb:
        grown = _round_up_gb(usage.req_mem_mb * float(rules["oom"]["factor"]))
        most = partition.mem_per_node_mb if partition else None
        if most and grown > most:
            return {} if usage.req_mem_mb >= most else {"mem": format_memory(most)}
        return {"mem": format_memory(grown)}
    if usage.state == "TIMEOUT" and usage.time_limit_s and usage.time_limit_s > 0:
        # a rerun with 1m after `-t 0:00:05` (run a minute) would end the same way
        minutes = math.ceil(slurm_given_s(usage.time_limit_s)
                            * float(rules["timeout"]["factor"]) / 60)  # whole hours from 1h
        longest = partition.max_time_s if partition else None
        if longest and minutes * 60 > longest:
            if usage.time_limit_s >= longest:
                return {}
            minutes = longest // 60  # the partition's limit, as whole hours where it is
            return {"time": f"{minutes // 60}h" if minutes % 60 == 0 else f"{minutes}m"}
        return {"time": f"{minutes}m" if minutes < 60 else f"{math.ceil(minutes / 60)}h"}
    return {}


def slurm_given_s(limit_s: float) -> float:
    """The time limit Slurm gives a job that asks for ``limit_s``: whole minutes, rounded up
    (``-t 0:00:05`` runs a minute; accounting's Timelimit says so, the request does not)."""
    return math.ceil(limit_s / 60) * 60


def _rule_timeout(usage: Usage, gpu: GpuSummary | None, rule: Mapping[str, Any],
                  partition: Partition | None) -> str | None:
    if usage.state != "TIMEOUT":
        return None
    asked = format_duration(slurm_given_s(usage.time_limit_s or 0))
    suggest = rerun_changes(usage, {"timeout": rule}, partition).get("time")
    if suggest is None and partition and usage.time_limit_s:
        return str(rule["at_limit"]).format(asked=asked, partition=partition.name)
    return str(rule["message"]).format(asked=asked, suggest=suggest or "more")


def _rule_oom(usage: Usage, gpu: GpuSummary | None, rule: Mapping[str, Any],
              partition: Partition | None) -> str | None:
    if usage.state != "OUT_OF_MEMORY" or not usage.req_mem_mb:
        return None
    asked = memory_text(usage.req_mem_mb)
    suggest = rerun_changes(usage, {"oom": rule}, partition).get("mem")
    if suggest is None and partition:
        return str(rule["at_limit"]).format(asked=asked, partition=partition.name)
    return str(rule["message"]).format(asked=asked, suggest=suggest)


def _round_up_gb(megabytes: float) -> int:
    return max(1024, math.ceil(megabytes / 1024) * 1024)


def _rule_memory(usage: Usage, gpu: GpuSummary | None, rule: Mapping[str, Any],
                 partition: Partition | None) -> str | None:
    fraction = usage.memory_fraction
    if (fraction is None or usage.req_mem_mb is None or usage.max_rss_mb is None
            or fraction > float(rule["max_used_fraction"])
            or usage.req_mem_mb < float(rule["min_request_mb"])):
        return None
    suggest = _round_up_gb(usage.max_rss_mb * float(rule["headroom"]))
    return None if suggest >= usage.req_mem_mb else str(rule["message"]).format(
        asked=memory_text(usage.req_mem_mb), peak=memory_text(usage.max_rss_mb),
        suggest=format_memory(suggest))


def _rule_cpu(usage: Usage, gpu: GpuSummary | None, rule: Mapping[str, Any],
              partition: Partition | None) -> str | None:
    efficiency = usage.cpu_efficiency
    cpus = usage.alloc_cpus or 0
    if (efficiency is None or cpus < int(rule["min_cpus"])
            or efficiency > float(rule["max_efficiency"])
            or (usage.elapsed_s or 0) < float(rule["min_elapsed_s"])):
        return None
    suggest = max(1, math.ceil(cpus * efficiency * float(rule["headroom"])))
    return None if suggest >= cpus else str(rule["message"]).format(
        cpus=cpus, efficiency=_percent(efficiency), suggest=suggest)


def _rule_gpu(usage: Usage, gpu: GpuSummary | None, rule: Mapping[str, Any],
              partition: Partition | None) -> str | None:
    if gpu is None or gpu.mean_utilisation / 100 > float(rule["max_mean_utilisation"]):
        return None
    return str(rule["message"]).format(gpus=gpu.gpus, util=f"{gpu.mean_utilisation:.0f}%")


def _rule_time(usage: Usage, gpu: GpuSummary | None, rule: Mapping[str, Any],
               partition: Partition | None) -> str | None:
    fraction = usage.time_fraction
    if (fraction is None or usage.time_limit_s is None or usage.elapsed_s is None
            or usage.state != "COMPLETED" or fraction > float(rule["max_used_fraction"])
            or usage.time_limit_s < float(rule["min_limit_s"])):
        return None
    minutes = max(1, math.ceil(usage.elapsed_s * float(rule["headroom"]) / 60))
    suggest = f"{minutes}" if minutes < 60 else f"{math.ceil(minutes / 60)}:00:00"
    return str(rule["message"]).format(asked=format_duration(usage.time_limit_s),
                                       used=format_duration(usage.elapsed_s), suggest=suggest)


_RULES = {"timeout": _rule_timeout, "oom": _rule_oom, "memory": _rule_memory,
          "cpu": _rule_cpu, "gpu": _rule_gpu, "time": _rule_time}


def array_summary(reports: Sequence[Report]) -> tuple[str, ...]:
    """An array's tasks at a glance, before (or instead of) one report per task: their
    states, the range of each figure, and the advice most of them got."""
    usages = [r.usage for r in reports]
    states = Counter(u.state for u in usages)
    counted = ", ".join(f"{count} {state}" for state, count in states.most_common())
    limits = _span([u.time_limit_s for u in usages], format_duration)
    lines = [f"{len(reports)} tasks: {counted}; CPU efficiency "
             f"{_span([u.cpu_efficiency for u in usages], _percent)}; memory peak "
             f"{_span([u.max_rss_mb for u in usages], memory_text)}; time "
             f"{_span([u.elapsed_s for u in usages], format_duration)} of {limits}"]
    advised = Counter(r.advice for r in reports if r.advice)
    if advised:
        common, count = advised.most_common(1)[0]
        total = sum(advised.values())
        lines.append(f"advice for {total} of {len(reports)} tasks"
                     f"{'' if count == total else f', most often ({count})'}: {common}")
    return tuple(lines)


def _span(values: Iterable[float | None], show: Callable[[float], str]) -> str:
    """``39%-44%``, or one value when all show alike; ``n/a`` when none is known."""
    known = sorted(v for v in values if v is not None)
    if not known:
        return "n/a"
    low, high = show(known[0]), show(known[-1])
    return low if low == high else f"{low}-{high}"


def report(usage: Usage, gpu_samples: Iterable[GpuSample] = (),
           rules: Mapping[str, Any] | None = None, memory_source: str = "",
           partition: Partition | None = None) -> Report:
    """The figures as short lines, and the advice. ``memory_source``: where the memory
    peak comes from when not from accounting (the node's own record); ``partition``: where
    the job ran (the advice never offers more than it has)."""
    gpu = GpuSummary.of(gpu_samples)
    lines = [f"state {usage.state}" + (f" (exit {usage.exit_code})"
                                       if usage.exit_code not in ("", "0:0") else "")]
    cpus, used = usage.alloc_cpus or "?", usage.total_cpu_s
    # a short task's 0.4 s is not "0s" beside a 40 % efficiency
    cpu_time = "n/a" if used is None else f"{used:.1f}s" if used < 10 else format_duration(used)
    lines.append(f"CPU efficiency {_percent(usage.cpu_efficiency)} ({cpu_time} of CPU time on "
                 f"{cpus} CPU{'' if cpus == 1 else 's'})")
    if usage.max_rss_mb is None:
        lines.append(f"memory peak not sampled (the job ended before accounting's first "
                     f"sample) of {memory_text(usage.req_mem_mb)} asked")
    else:
        lines.append(f"memory peak {memory_text(usage.max_rss_mb)} of "
                     f"{memory_text(usage.req_mem_mb)} asked ({_percent(usage.memory_fraction)}"
                     + (f"; from {memory_source})" if memory_source else ")"))
    limit = format_duration(usage.time_limit_s) if usage.time_limit_s else "no limit"
    elapsed = format_duration(usage.elapsed_s) if usage.elapsed_s is not None else "n/a"
    lines.append(f"time {elapsed} of {limit} ({_percent(usage.time_fraction)})")
    if gpu is not None:
        lines.append(f"GPU utilisation {gpu.mean_utilisation:.0f}% on average over "
                     f"{gpu.gpus} GPU{'s' if gpu.gpus != 1 else ''}, memory peak "
                     f"{memory_text(gpu.peak_memory_mb)} of {memory_text(gpu.memory_total_mb)}")
    elif usage.gpus:
        lines.append(f"{usage.gpus} GPU(s) allocated; no samples (no nvidia-smi on the node)")
    return Report(usage, tuple(lines), advice(usage, gpu, rules, partition))
