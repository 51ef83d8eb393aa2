"""Check a request against a profile and report every problem at once."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .profiles import ClusterProfile
from .resources import ResourceRequest
from .units import UNLIMITED, format_time

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Problem:
    severity: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.message}"


def check(request: ResourceRequest, profile: ClusterProfile) -> list[Problem]:
    """Every problem of ``request`` on ``profile``; errors first."""
    problems: list[Problem] = []

    def error(name: str, message: str) -> None:
        problems.append(Problem(ERROR, name, message))

    def warn(name: str, message: str) -> None:
        problems.append(Problem(WARNING, name, message))

    partition = profile.partition(request.partition)
    if request.partition and profile.partitions and partition is None:
        error("partition", f"partition {request.partition!r} does not exist on "
              f"{profile.name}: use one of {', '.join(profile.partitions)}")

    if request.time_s is None and profile.time_required:
        error("time", f"{profile.name} needs a time limit: add -t HH:MM:SS")
    if partition and partition.max_time_s and request.time_s is not None:
        if request.time_s == UNLIMITED or request.time_s > partition.max_time_s:
            error("time", f"time {format_time(request.time_s)} exceeds the "
                  f"{format_time(partition.max_time_s)} limit of partition {partition.name!r}: "
                  "ask for less or choose a longer partition")
    if partition and partition.max_nodes and request.node_count > partition.max_nodes:
        error("nodes", f"{request.node_count} nodes exceed the {partition.max_nodes}-node limit "
              f"of partition {partition.name!r}")
    if partition and partition.requires_qos and request.qos != partition.requires_qos:
        error("qos", f"partition {partition.name!r} needs --qos={partition.requires_qos}")

    if partition and partition.cpus_per_node and request.cpus_per_task:
        cpus = request.cpus_per_task * (request.ntasks_per_node or 1)
        if cpus > partition.cpus_per_node:
            error("cpus-per-task", f"{cpus} CPUs per node exceed the {partition.cpus_per_node} "
                  f"of partition {partition.name!r}")
    if partition and partition.mem_per_node_mb and request.mem_mb:
        if request.mem_mb > partition.mem_per_node_mb:
            error("mem", f"--mem {request.mem_mb}M exceeds the {partition.mem_per_node_mb}M "
                  f"a node of partition {partition.name!r} has (--mem=0 asks for all of it)")

    gpus = request.gpus()
    if gpus is not None and partition is not None and profile.partitions:
        if partition.gpus_per_node == 0:
            error("gpus-per-node", f"partition {partition.name!r} has no GPUs: choose a GPU "
                  "partition or drop the GPU request")
        elif gpus.count > partition.gpus_per_node:
            error("gpus-per-node", f"{gpus.count} GPUs per node exceed the "
                  f"{partition.gpus_per_node} of partition {partition.name!r}")
        if gpus.type and partition.gpu_types and gpus.type.lower() not in {
            t.lower() for t in partition.gpu_types
        }:
            error("gpus-per-node", f"GPU type {gpus.type!r} does not exist in partition "
                  f"{partition.name!r}: use one of {', '.join(partition.gpu_types)}")
        if (
            gpus.type and partition.gpu_types
            and gpus.type not in partition.gpu_types
            and gpus.type.lower() in {t.lower() for t in partition.gpu_types}
        ):
            warn("gpus-per-node", f"GPU type {gpus.type!r} is spelled "
                 f"{next(t for t in partition.gpu_types if t.lower() == gpus.type.lower())!r}"
                 f" on {profile.name}")
    if gpus is not None and gpus.type is None and profile.gpu_type_required:
        error("gpus-per-node", f"{profile.name} needs a typed GPU request like "
              f"--gpus-per-node=A40:1 (types: {', '.join(_all_gpu_types(profile))})")
    if (gpus is None and profile.gpu_constraint_for_cpu_only
            and request.constraint != profile.gpu_constraint_for_cpu_only
            and request.backend != "local"):
        error("gpus-per-node", f"{profile.name} is a GPU cluster: request GPUs with "
              f"--gpus-per-node=TYPE:N, or add -C {profile.gpu_constraint_for_cpu_only} "
              "for a CPU-only job")

    account = request.account
    if account:
        if account in profile.account_placeholders or re.fullmatch(r"<.*>|\$\{?\w+\}?", account):
            error("account", f"account {account!r} is a placeholder: use your own project"
                  + (f" (like {profile.account_example})" if profile.account_example else ""))
        elif profile.account_pattern and not re.fullmatch(profile.account_pattern, account):
            warn("account", f"account {account!r} does not look like a {profile.name} project"
                 + (f" (like {profile.account_example})" if profile.account_example else ""))
    elif profile.account_required and request.backend != "local":
        error("account", f"{profile.name} needs a project account: add -A "
              f"{profile.account_example or 'PROJECT'}")

    problems.sort(key=lambda p: p.severity != ERROR)
    return problems


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == ERROR]


def _all_gpu_types(profile: ClusterProfile) -> list[str]:
    types: list[str] = []
    for partition in profile.partitions.values():
        types += [t for t in partition.gpu_types if t not in types]
    return types
