"""The efficiency report of an ended job, as text (the notebook's and the widget's) and a GPU plot.

Figures come from the watcher (the user's one shared ``sacct`` per interval, then the
folder's ``usage.json``) and the job's own GPU samples; nothing here asks the scheduler.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..core.efficiency import GpuSample, Report, Usage, array_summary, parse_gpu_samples, report
from ..core.jobids import task_order
from ..jobfacts import node_files, partition_ran_in, recorded_peak

SHOWN_TASKS = 20  # an array's tasks reported one by one; the summary covers them all


def gpu_samples(folder: Any, job_id: str, tail_bytes: int | None = None) -> tuple[GpuSample, ...]:
    """The samples the job recorded, every node's (none without GPUs or nvidia-smi);
    a GPU is named by its node and index when more than one node sampled."""
    files = node_files(folder.path, "gpu", job_id, "csv", tail_bytes)
    samples: list[GpuSample] = []
    for host, text in files:
        found = parse_gpu_samples(text)
        if len(files) > 1 and host:
            found = tuple(replace(s, index=f"{host}:{s.index}") for s in found)
        samples += found
    return tuple(samples)


def reports(folder: Any, usages: Sequence[Usage]) -> list[tuple[Report, tuple[GpuSample, ...]]]:
    """One report per job, or per array task. The memory peak is accounting's, or the one
    the nodes recorded when larger: sacct samples every 30 s or so, so a short job has no
    sample, or one taken before the job grew; the node's record is its exact peak."""
    out = []
    partition = partition_ran_in(folder)
    for usage in sorted(usages, key=lambda usage: task_order(usage.job_id)):
        samples = gpu_samples(folder, usage.job_id)
        source = ""
        peak = recorded_peak(folder.path, usage.job_id)
        if peak is not None and (usage.max_rss_mb is None or peak.megabytes > usage.max_rss_mb):
            sampled = usage.max_rss_mb
            source = (f"{peak.source}; accounting " + ("had no sample" if sampled is None
                                                       else f"sampled {sampled:.0f}M"))
            usage = replace(usage, max_rss_mb=peak.megabytes)
        out.append((report(usage, samples, memory_source=source, partition=partition), samples))
    return out


def report_text(items: Sequence[tuple[Report, tuple[GpuSample, ...]]]) -> str:
    """One report; an array's summed up first, then task by task (the first SHOWN_TASKS)."""
    lines: list[str] = []
    if len(items) > 1:
        lines += [*array_summary([item for item, _ in items]), ""]
    for item, _ in items[:SHOWN_TASKS]:
        if len(items) > 1:
            lines.append(f"task {item.usage.job_id}:")
        indent = "  " if len(items) > 1 else ""
        lines += [indent + line for line in item.lines]
        if item.advice:
            lines.append(f"{indent}advice: {item.advice}")
    if len(items) > SHOWN_TASKS:
        lines.append(f"({len(items) - SHOWN_TASKS} more tasks, in the summary above)")
    return "\n".join(lines)


def gpu_plot_png(items: Sequence[tuple[Report, tuple[GpuSample, ...]]], title: str
                 ) -> bytes | None:
    """Utilisation and memory of each GPU of the reports' jobs over time, as a small PNG;
    ``None`` without samples or without matplotlib."""
    samples = [s for _, job_samples in items for s in job_samples]
    if not samples:
        return None
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    figure = Figure(figsize=(6, 2.4), dpi=80)
    utilisation, memory = figure.subplots(1, 2)
    for index in sorted({s.index for s in samples}):
        mine = [s for s in samples if s.index == index]
        minutes = [s.seconds / 60 for s in mine]
        utilisation.plot(minutes, [s.utilisation for s in mine], label=f"GPU {index}")
        memory.plot(minutes, [s.memory_used_mb / 1024 for s in mine], label=f"GPU {index}")
    utilisation.set(title="utilisation %", xlabel="minutes", ylim=(0, 105))
    memory.set(title="memory GB", xlabel="minutes",
               ylim=(0, max(s.memory_total_mb for s in samples) / 1024 * 1.05))
    utilisation.legend(fontsize="small")
    figure.suptitle(title, fontsize="small")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()
