"""Render a request as ``#SBATCH`` directives, and the cost line users see."""

from __future__ import annotations

from .profiles import ClusterProfile
from .resources import ResourceRequest
from .units import format_memory, format_time


def directives(request: ResourceRequest, profile: ClusterProfile | None = None,
               job_name: str | None = None) -> list[tuple[str, str]]:
    """The (flag, value) pairs sbatch gets, in a stable, readable order."""
    pairs: list[tuple[str, str]] = []
    if job_name:
        pairs.append(("job-name", job_name))
    if request.account:
        pairs.append(("account", request.account))
    partition = request.partition or (profile.default_partition if profile else None)
    if request.partition:
        pairs.append(("partition", request.partition))
    if request.qos:
        pairs.append(("qos", request.qos))
    if request.time_s is not None:
        pairs.append(("time", format_time(request.time_s)))
    if request.nodes is not None:
        pairs.append(("nodes", str(request.nodes)))
    if request.ntasks_per_node is not None:
        pairs.append(("ntasks-per-node", str(request.ntasks_per_node)))
    if request.cpus_per_task is not None:
        pairs.append(("cpus-per-task", str(request.cpus_per_task)))
    if request.mem_mb is not None:
        pairs.append(("mem", format_memory(request.mem_mb) if request.mem_mb else "0"))
    if request.gpus_per_node is not None:
        if profile is not None and profile.gpu_flag == "gres":
            pairs.append(("gres", f"gpu:{request.gpus_per_node}"))
        else:
            pairs.append(("gpus-per-node", str(request.gpus_per_node)))
    if request.gres:
        pairs.append(("gres", request.gres))
    if request.constraint:
        pairs.append(("constraint", request.constraint))
    if profile is not None:
        pairs += [pair for pair in profile.extra_directives if pair[0] not in dict(pairs)]
    pairs += list(request.extra)
    del partition
    return pairs


def header_lines(request: ResourceRequest, profile: ClusterProfile | None = None,
                 job_name: str | None = None) -> list[str]:
    return [f"#SBATCH --{flag}={value}" if value else f"#SBATCH --{flag}"
            for flag, value in directives(request, profile, job_name)]


def cost_line(request: ResourceRequest) -> str:
    """``≈ 2 GPU-h (2 node-h)``; empty when there is no time limit to cost."""
    node_hours = request.node_hours()
    if node_hours is None:
        return "no time limit set: cost unknown (add -t)"
    gpu_hours = request.gpu_hours()
    if gpu_hours:
        return f"≈ {_short(gpu_hours)} GPU-h ({_short(node_hours)} node-h) at most"
    return f"≈ {_short(node_hours)} node-h at most"


def _short(value: float) -> str:
    return f"{value:.0f}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"
