"""The job widget's live telemetry while the job runs: its memory against the request and
each GPU's utilisation as sparklines (inline SVG: no plotting library in the refresh),
and a nudge when a GPU sits idle.

The samples are the ones the node writes into the job folder (``core/node_records.py``):
the widget monitor's refresh reads only the end of each file, so a long job's samples
cost what a short one's do, and no scheduler is asked anything.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from ..core.efficiency import memory_text
from ..core.node_records import GPU_SAMPLE_EVERY_S, parse_memory_samples
from ..core.units import format_duration
from ..jobfacts import asked_memory, node_files
from .efficiency import gpu_samples

SAMPLES_TAIL_BYTES = 16 * 1024  # of each samples file: minutes of samples, whatever the job's age
POINTS = 60  # the last samples a sparkline shows
IDLE_BELOW_PCT = 5.0
IDLE_SAMPLES = 12  # a minute of GPU samples (one every GPU_SAMPLE_EVERY_S) under it: the nudge
WIDTH, HEIGHT = 120, 22
MEMORY_COLOUR, GPU_COLOUR, REQUEST_COLOUR = "#1565c0", "#2e7d32", "#c62828"


def sparkline(values: Sequence[float], top: float, colour: str,
              line_at: float | None = None) -> str:
    """``values`` (oldest first) as a small SVG polyline scaled to ``top``; ``line_at``: a
    dashed level (the request)."""
    top = max(top, *values, line_at or 0.0) or 1.0
    step = WIDTH / max(len(values) - 1, 1)
    points = " ".join(f"{i * step:.1f},{HEIGHT - v / top * HEIGHT:.1f}"
                      for i, v in enumerate(values))
    level = "" if line_at is None else (
        f"<line x1='0' x2='{WIDTH}' y1='{HEIGHT - line_at / top * HEIGHT:.1f}' "
        f"y2='{HEIGHT - line_at / top * HEIGHT:.1f}' stroke='{REQUEST_COLOUR}' "
        "stroke-dasharray='3,2'/>")
    return (f"<svg class='hpc-magics-sparkline' width='{WIDTH}' height='{HEIGHT}' "
            f"style='vertical-align:middle;overflow:visible'>{level}<polyline "
            f"points='{points}' fill='none' stroke='{colour}' stroke-width='1.5'/></svg>")


def memory_lines(folder: Any, job_id: str) -> list[str]:
    """One line per node that sampled: the sparkline, now, and the peak of the request
    (the job's ``--mem``, else the limit its nodes recorded)."""
    files = node_files(folder.path, "mem", job_id, "csv", SAMPLES_TAIL_BYTES)
    asked, limit = asked_memory(folder, job_id)
    request = asked or limit
    lines = []
    for host, text in files:
        samples = parse_memory_samples(text)
        if not samples:
            continue
        of = f" of {memory_text(request)} {'asked' if asked else 'its limit'}" if request else ""
        where = f" on {html.escape(host)}" if len(files) > 1 else ""
        plot = sparkline([s.megabytes for s in samples[-POINTS:]], 0.0, MEMORY_COLOUR, request)
        lines.append(
            f"memory{where} {plot} now {memory_text(samples[-1].megabytes)} · peak "
            f"{memory_text(samples[-1].peak_mb)}{of}")
    return lines


def gpu_lines(folder: Any, job_id: str) -> list[str]:
    """One line per GPU: its utilisation's sparkline and value now, and the nudge when it
    has been idle for the last IDLE_SAMPLES samples."""
    samples = gpu_samples(folder, job_id, SAMPLES_TAIL_BYTES)
    lines = []
    for index in sorted({s.index for s in samples}):
        mine = [s for s in samples if s.index == index][-POINTS:]
        use = [s.utilisation for s in mine]
        lines.append(f"GPU {html.escape(index)} {sparkline(use, 100.0, GPU_COLOUR)} "
                     f"{use[-1]:.0f}% busy")
        idle = mine[-IDLE_SAMPLES:]
        if len(idle) == IDLE_SAMPLES and all(u < IDLE_BELOW_PCT for u in use[-IDLE_SAMPLES:]):
            idle_s = idle[-1].seconds - idle[0].seconds + GPU_SAMPLE_EVERY_S
            lines.append(f"<b style='color:{REQUEST_COLOUR}'>GPU {html.escape(index)} idle for "
                         f"{format_duration(idle_s)}: is the code on the GPU?</b>")
    return lines


def telemetry_html(folder: Any, job_id: str) -> str:
    """The section's HTML ("" before the first sample)."""
    lines = memory_lines(folder, job_id) + gpu_lines(folder, job_id)
    return f"<small>{'<br>'.join(lines)}</small>" if lines else ""
