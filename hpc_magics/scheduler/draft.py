"""A profile drafted from the cluster this runs on (``hpc-magics profiles --draft``): each
partition's limits (``scontrol show partition``) and nodes (``sinfo``), as TOML the profile
loader reads as it is. What Slurm cannot tell (accounts, advice, the GPU counts a site
schedules, whether the login host reaches the nodes' ports) is left for the admin, as
comments and commented templates.
"""

from __future__ import annotations

import datetime as _dt
import json
import shutil

from ..core.errors import SubmissionError
from ..core.units import format_time
from . import live
from .cluster import cluster_name
from .slurm_text import slurm_duration


def _q(text: str) -> str:
    return json.dumps(text)  # a TOML basic string is a JSON string


def draft_profile(name: str | None = None, today: _dt.date | None = None) -> str:
    """The TOML text of a profile for this cluster, saying as comments what it lacks;
    ``SubmissionError`` when Slurm lists no partition to draft from."""
    parts = live.partitions()
    # none is no draft (a profile listing no partition, with ``partitions_complete``, would
    # refuse every one)
    if not parts and shutil.which("scontrol") is None:
        raise SubmissionError("scontrol is not on PATH: --draft reads the partitions from "
                              "scontrol and sinfo; run it on the cluster's login node (after "
                              "`module load slurm` where the site needs it); nothing written")
    if not parts:
        raise SubmissionError("scontrol show partition lists no partition (or failed): nothing "
                              "to draft a profile from; nothing written")
    cluster = name or cluster_name()
    day = (today or _dt.date.today()).isoformat()
    groups = live.node_groups()
    default = next((n for n, d in parts.items() if d.get("Default") == "YES"), None)
    lines = [
        f"# Drafted by `hpc-magics profiles --draft` on {day} from scontrol show partition "
        f"and sinfo on cluster {cluster}.",
        "# Review it: add account_pattern/account_example, notes, and the documentation address;",
        "# uncomment gpu_counts and [kernel] only where the site's documentation says so.",
        f"description = {_q(f'{cluster}: drafted from Slurm ({len(parts)} partitions)')}",
        f"documentation = {_q(f'scontrol show partition and sinfo on {cluster}')}",
        f"documented_on = {_q(day)}",
        f"cluster_names = [{_q(cluster)}]",
        "partitions_complete = true",
        'gpu_flag = "gres"',
        'billing = "core"',
    ]
    if default:
        lines.append(f"default_partition = {_q(default)}")
    if not groups:
        lines.append("# sinfo listed no nodes: add each partition's cpus_per_node, "
                     "mem_per_node and GPUs")
    for part, data in parts.items():
        lines += ["", f"[partitions.{_q(part)}]"]
        max_time = slurm_duration(data.get("MaxTime", "UNLIMITED"))
        if max_time:
            lines.append(f"max_time = {_q(format_time(max_time))}")
        default_time = slurm_duration(data.get("DefaultTime", "NONE"))
        if default_time:
            lines.append(f"# partition default time: {format_time(default_time)} "
                         "(Slurm's, for a job that asks none)")
        if data.get("MaxNodes", "").isdigit():
            lines.append(f"max_nodes = {int(data['MaxNodes'])}")
        mine = [g for g in groups if g.partition == part]
        if mine:
            lines += [f"cpus_per_node = {max(g.cpus for g in mine)}",
                      f"mem_per_node = {_q(f'{max(g.mem_mb for g in mine)}M')}"]
        types = live.gpu_types(part)
        if types:
            most = max(types.values())
            lines.append(f"gpus_per_node = {most}")
            named = [t for t in types if t != live.UNTYPED]  # gres.conf without Type
            if named:
                lines.append("gpu_types = [" + ", ".join(_q(t) for t in named) + "]")
            if len({types[t] for t in named}) > 1:
                lines.append("gpus_per_type = { " + ", ".join(
                    f"{_q(t)} = {n}" for t in named for n in [types[t]]) + " }")
            if most > 1:  # Slurm's answers never say which counts a site allows
                lines.append(f"# gpu_counts = [1, {most}]  # only if the site schedules just "
                             "these GPUs a node (Trillium: 1 or a whole node); Slurm's answers "
                             "do not show it")
        if data.get("OverSubscribe", "NO").startswith("EXCLUSIVE"):
            lines.append("whole_node = true")
        if data.get("TRESBillingWeights"):
            lines.append(f"billing_weights = {_q(data['TRESBillingWeights'])}")
        qos = data.get("QoS", "N/A")
        if qos not in {"N/A", ""}:
            lines.append(f"# partition QOS: {qos}")
    return "\n".join(lines + _KERNEL_TEMPLATE) + "\n"


# How the login host reaches a Slurm kernel (docs/profiles.md): Slurm cannot tell whether the
# nodes' ports are open to it, so the table is a template
_KERNEL_TEMPLATE = [
    "",
    "# How the login host reaches a Slurm kernel (hpc-magics kernel install):",
    "# tcp (the default) where the nodes' ports are open to it, else an SSH tunnel.",
    "# [kernel]",
    '# tunnel = "ssh"',
    '# ssh_options = ["-F", "~/.ssh/hpc_nodes"]  # ssh\'s own arguments, given first',
]
