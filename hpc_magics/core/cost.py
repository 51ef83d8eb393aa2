"""What a job costs at most under the profile's billing rule, and the line users see.

Whole-node partitions bill every core; elsewhere the cores asked for. With the partition's
``TRESBillingWeights`` the billed units are their weighted sum per hour, as Slurm's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .efficiency import tres
from .errors import HpcMagicsError
from .profiles import ClusterProfile, load_profile
from .resources import ResourceRequest, from_dict
from .units import UNLIMITED, parse_memory

_UNITS = {"node": "node-h", "gpu": "GPU-h", "core": "core-h"}


@dataclass(frozen=True)
class Cost:
    node_hours: float | None
    gpu_hours: float | None
    core_hours: float | None
    billed: float | None  # in billed_unit
    billed_unit: str
    rule: str  # how it was counted, in words


def billing_units(weights: str, cpus: int, mem_mb: int, gpus: int, nodes: int) -> float:
    """Slurm's billing for one hour: the sum of each TRES count times its weight;
    ``Mem=0.25G`` weighs a gigabyte (a bare number a megabyte), as slurm.conf says."""
    total = 0.0
    for name, weight in tres(weights).items():
        match = re.fullmatch(r"([\d.]+)([KMGT]?)", weight, re.IGNORECASE)
        key = name.lower()
        key = "gpu" if key == "gres/gpu" or key.startswith("gres/gpu:") else key
        if match:
            counts = {"cpu": cpus, "gpu": gpus, "node": nodes,
                      "mem": mem_mb / parse_memory(f"1{match.group(2) or 'M'}")}
            total += float(match.group(1)) * counts.get(key, 0)
    return total


def estimate(request: ResourceRequest, profile: ClusterProfile | None = None,
             billing_weights: str = "") -> Cost:
    from .validation import resolve_partition  # validation imports profiles; keep cost light

    hours = None if request.time_s in (None, UNLIMITED) else (request.time_s or 0) / 3600
    partition = resolve_partition(request, profile) if profile else None
    nodes, gpus = request.node_count, getattr(request.all_gpus(), "count", 0)
    whole = bool(partition and partition.whole_node)
    asked_cpus = (request.cpus_per_task or 1) * (request.ntasks_per_node or 1)
    cores = partition.cpus_per_node if whole and partition and partition.cpus_per_node \
        else asked_cpus
    kind = profile.billing if profile and profile.billing in _UNITS else "node"
    weights = billing_weights or (partition.billing_weights if partition else "")
    if hours is None:
        return Cost(None, None, None, None, _UNITS[kind], "no time limit")
    node_h, gpu_h, core_h = nodes * hours, nodes * gpus * hours, nodes * cores * hours
    if weights:
        mem = request.mem_mb or 0
        if whole and partition and partition.mem_per_node_mb:
            mem = partition.mem_per_node_mb
        billed = billing_units(weights, cores, mem, gpus, 1) * nodes * hours
        return Cost(node_h, gpu_h, core_h, billed, "billing-h",
                    f"TRESBillingWeights {weights}")
    billed = {"node": node_h, "gpu": gpu_h, "core": core_h}[kind]
    rule = ("whole nodes, " if whole else "") + f"billed by the {_UNITS[kind].removesuffix('-h')}"
    return Cost(node_h, gpu_h, core_h, billed, _UNITS[kind], rule)


def cost_so_far(request_data: Mapping[str, Any], elapsed_s: float) -> str:
    """What a job (its request as meta.json keeps it) has cost until now under its
    profile's billing rule ("" when unknown)."""
    try:
        request = from_dict(dict(request_data)).changed(time_s=max(1, int(elapsed_s)))
        cost = estimate(request, load_profile(request.profile))
    except (HpcMagicsError, TypeError, ValueError):
        return ""
    # four decimals: a new job has cost little
    return "" if cost.billed is None else f"{cost.billed:.4f} {cost.billed_unit}"


# ------------------------------------------------------------------ the line users see
def cost_line(request: ResourceRequest, profile: ClusterProfile | None = None,
              billing_weights: str = "") -> str:
    """``≈ 2 GPU-h (2 node-h) at most``; with a profile, also what its billing rule
    charges."""
    cost = estimate(request, profile, billing_weights)
    if cost.node_hours is None and request.time_s == UNLIMITED:  # -t 0, as the script says
        return ("no time limit (--time=UNLIMITED: the partition's maximum applies): cost "
                "unknown (-t 2h bounds it)")
    if cost.node_hours is None:
        return "no time limit set: cost unknown (add -t)"
    line = f"≈ {_short(cost.node_hours)} node-h at most"
    if cost.gpu_hours:
        line = f"≈ {_short(cost.gpu_hours)} GPU-h ({_short(cost.node_hours)} node-h) at most"
    if profile is not None and profile.partitions and cost.billed is not None:
        line += (f"; {_short(cost.core_hours or 0)} core-h; charged "
                 f"{_short(cost.billed)} {cost.billed_unit} ({cost.rule})")
    return line


def _short(value: float) -> str:
    if 0 < abs(value) < 0.05:  # a few minutes are not free: "0.033", never "0"
        return f"{value:.2g}"
    return f"{value:.0f}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"
