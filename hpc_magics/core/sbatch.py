"""The cost line users see beside a request (the script itself: ``core/jobscript.py``)."""

from __future__ import annotations

from .resources import ResourceRequest


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
