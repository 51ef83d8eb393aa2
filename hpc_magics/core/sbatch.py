"""The cost line users see beside a request (the script itself: ``core/jobscript.py``)."""

from __future__ import annotations

from .profiles import ClusterProfile
from .resources import ResourceRequest


def cost_line(request: ResourceRequest, profile: ClusterProfile | None = None,
              billing_weights: str = "") -> str:
    """``≈ 2 GPU-h (2 node-h) at most``; with a profile, also what its billing rule charges
    (``core/cost.py``)."""
    from .cost import estimate

    cost = estimate(request, profile, billing_weights)
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
    if 0 < abs(value) < 0.05:  # a few minutes' job costs something: not "0"
        return f"{value:.1g}"
    return f"{value:.0f}" if abs(value - round(value)) < 0.05 else f"{value:.1f}"
