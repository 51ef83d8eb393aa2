"""Live checks against the cluster this machine submits to: ``scontrol show partition``,
``sinfo`` (GRES), ``sacctmgr show assoc`` and ``sbatch --test-only``, each answer kept in
this process so one session asks each only once. A command that cannot be asked is said
as a warning, never as a refusal.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

from ..core.checkscript import ERROR, WARNING, ScriptReport, with_findings
from ..core.errors import HpcMagicsError
from ..core.resources import ResourceRequest
from ..core.units import UNLIMITED, format_time, slurm_int
from ..core.users import login_name
from ..core.validation import Problem
from . import commands
from . import submit as submission
from .limits import answered, cached
from .slurm_text import scontrol_fields, slurm_duration


def partitions() -> dict[str, dict[str, str]]:
    """Partition name → its ``scontrol show partition`` fields."""
    text = answered(["scontrol", "show", "partition", "--oneliner"]) or ""
    records = map(scontrol_fields, text.splitlines())
    return {data["PartitionName"]: data for data in records if "PartitionName" in data}


@dataclass(frozen=True)
class NodeGroup:
    partition: str
    gres: str  # "gpu:v100:2" or "(null)"
    cpus: int
    mem_mb: int


def node_groups() -> list[NodeGroup]:
    """``sinfo``'s node groups: partition, GRES, CPUs, memory (one line per kind of node;
    ``%D``, their count, is asked as the recordings have it, and not used)."""
    groups = []
    for line in (answered(["sinfo", "-h", "-o", "%P|%G|%c|%m|%D"]) or "").splitlines():
        parts = line.strip().split("|")
        if len(parts) != 5:
            continue
        name, gres, cpus, mem, _ = parts
        groups.append(NodeGroup(name.rstrip("*"), gres, slurm_int(cpus) or 0,
                                slurm_int(mem) or 0))
    return groups


# sinfo's %G: "gpu:v100:2", "gpu:a100:4(S:0-1)", or untyped "gpu:4" (gres.conf without Type)
_GPU_GRES = re.compile(r"^gpu(?::([^:(]+))?:(\d+)(?:\(.*\))?$")
UNTYPED = ""  # the GPU "type" of nodes whose GPUs have none


def gres_gpus(gres: str) -> dict[str, int]:
    """GPU type (``UNTYPED`` for ``gpu:4``) → count, of one sinfo ``%G`` value."""
    found: dict[str, int] = {}
    for item in gres.split(","):
        match = _GPU_GRES.match(item.strip())
        if match:
            kind = match.group(1) or UNTYPED
            found[kind] = found.get(kind, 0) + int(match.group(2))
    return found


def gpu_types(partition: str) -> dict[str, int]:
    """GPU type (``UNTYPED`` where nodes name none) → most GPUs of that type on one node of
    ``partition`` (from sinfo)."""
    found: dict[str, int] = {}
    for group in (g for g in node_groups() if g.partition == partition):
        for kind, count in gres_gpus(group.gres).items():
            found[kind] = max(found.get(kind, 0), count)
    return found


@dataclass(frozen=True)
class Association:
    account: str
    partition: str
    qos: tuple[str, ...]


def associations(user: str) -> list[Association] | None:
    """The user's accounts and the QOS each allows; None when sacctmgr cannot say."""
    text = answered(["sacctmgr", "-n", "-P", "show", "assoc", "where", f"user={user}",
                     "format=Account,Partition,QOS"])
    if text is None:
        return None
    found = []
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3 and parts[0]:
            found.append(Association(parts[0], parts[1],
                                     tuple(q for q in parts[2].split(",") if q)))
    return found


@dataclass(frozen=True)
class TestOnly:
    fits: bool
    start: str  # when Slurm expects the job to start, as it says it
    message: str


def test_only(script: str) -> TestOnly | str:
    """``sbatch --test-only`` on the script: submits nothing; a string says why it could not."""
    if not script.startswith("#!"):  # a pasted #SBATCH block: sbatch wants an interpreter line
        script = "#!/bin/bash\n" + script
    try:
        answer = cached(("test-only", script), lambda: submission.check_only(script), math.inf)
    except HpcMagicsError as error:
        return str(error)
    text = (answer.stderr + answer.stdout).strip()
    start = re.search(r"to start at (\S+)", text)
    if answer.ok:
        return TestOnly(True, start.group(1) if start else "", text)
    return TestOnly(False, "", text.replace("sbatch: error: ", ""))


@dataclass(frozen=True)
class LiveReport:
    findings: tuple[Problem, ...]
    start: str = ""
    billing_weights: str = ""
    asked: tuple[str, ...] = field(default=())


def check(request: ResourceRequest, script: str | None = None,
          user: str | None = None) -> LiveReport:
    """What the cluster itself says about ``request`` (and ``script``, if given)."""
    found: list[Problem] = []
    user = user or login_name()
    parts = partitions()
    if not parts:
        return LiveReport((Problem(WARNING, "", "the cluster did not answer scontrol show "
                                   "partition: live checks skipped"),))
    default = next((n for n, d in parts.items() if d.get("Default") == "YES"), None)
    name = request.partition or default
    data = parts.get(name or "")
    if request.partition and data is None:
        found.append(Problem(ERROR, "partition", f"partition {request.partition!r} does not "
                             f"exist on this cluster: use one of {', '.join(parts)}"))
    if data is not None:
        found += _partition_limits(request, name or "", data)
    found += _accounts(request, user)
    weights = data.get("TRESBillingWeights", "") if data else ""
    start = ""
    if script is not None:
        answer = test_only(script)
        if isinstance(answer, str):
            found.append(Problem(WARNING, "", f"sbatch --test-only could not run: {answer}"))
        elif answer.fits:
            start = answer.start
        else:
            found.append(Problem(ERROR, "", f"sbatch --test-only: {answer.message}"))
    return LiveReport(tuple(found), start, weights,
                      ("scontrol", "sinfo", "sacctmgr") + (("sbatch --test-only",)
                                                           if script is not None else ()))


def _partition_limits(request: ResourceRequest, name: str, data: dict[str, str]
                      ) -> list[Problem]:
    found = []
    max_time = slurm_duration(data.get("MaxTime", "UNLIMITED"))
    if max_time and request.time_s and (request.time_s == UNLIMITED
                                        or request.time_s > max_time):
        found.append(Problem(ERROR, "time", f"time {format_time(request.time_s)} exceeds "
                             f"the MaxTime of partition {name!r}, {format_time(max_time)} "
                             "(scontrol)"))
    max_nodes = data.get("MaxNodes", "UNLIMITED")
    if max_nodes.isdigit() and request.node_count > int(max_nodes):
        found.append(Problem(ERROR, "nodes", f"{request.node_count} nodes exceed the MaxNodes "
                             f"of partition {name!r}, {max_nodes} (scontrol)"))
    gpus = request.gpus()
    if gpus is not None:
        types = gpu_types(name)
        option = "gres" if request.gres and request.gpus_per_node is None else "gpus-per-node"
        if not types:
            found.append(Problem(ERROR, option, f"partition {name!r} has no GPUs (sinfo)"))
        elif gpus.type and gpus.type not in types:
            listed = ", ".join(sorted(t for t in types if t)) or "untyped GPUs only: drop the type"
            found.append(Problem(ERROR, option, f"GPU type {gpus.type!r} is not in partition "
                                 f"{name!r}: sinfo lists {listed}"))
        elif gpus.count > (most := types[gpus.type] if gpus.type else max(types.values())):
            found.append(Problem(ERROR, option, f"{gpus.count} GPUs per node exceed the {most} "
                                 f"a node of partition {name!r} has (sinfo)"))
    return found


def _accounts(request: ResourceRequest, user: str) -> list[Problem]:
    assocs = associations(user)
    if assocs is None:
        return [Problem(WARNING, "account", "sacctmgr did not answer: accounts not checked")]
    if not assocs:
        return []  # no accounting associations here: nothing to compare with
    accounts = sorted({a.account for a in assocs})
    found = []
    if request.account and request.account not in accounts:
        found.append(Problem(ERROR, "account", f"{user} has no association with account "
                             f"{request.account!r}: yours are {', '.join(accounts)}"))
    if request.qos:
        allowed = {q for a in assocs for q in a.qos
                   if not request.account or a.account == request.account}
        if allowed and request.qos not in allowed:
            with_account = f" with account {request.account!r}" if request.account else ""
            found.append(Problem(ERROR, "qos", f"QOS {request.qos!r} is not allowed for "
                                 f"{user}{with_account}: use one of {', '.join(sorted(allowed))}"))
    return found


def with_live(report: ScriptReport, script: str, wanted: bool | None = None
              ) -> tuple[ScriptReport, str]:
    """``report`` with what the cluster says, and lines saying what was asked.

    ``wanted`` None: when Slurm is here and the profile is this cluster's or any cluster's,
    as for a cell (``cluster.live_wanted``; checking an Alvis script on a laptop asks
    nothing); True: whenever Slurm is here; False: never.
    """
    from ..core.cost import cost_line
    from ..core.profiles import load_profile
    from .cluster import cluster_name, live_wanted

    if wanted is False or not commands.slurm_available():
        return report, ""
    profile = load_profile(report.profile)
    if wanted is None:
        wanted, why_not = live_wanted(profile)
        if not wanted:
            return report, why_not
    answer = check(report.request, script)
    report = with_findings(report, [replace(f, message=f"{f.message} (live)")
                                    for f in answer.findings])
    said = [f"live: asked {', '.join(answer.asked)} on {cluster_name()}"]
    if answer.start:
        said.append(f"live: sbatch --test-only expects it to start at {answer.start}")
    if answer.billing_weights:
        said.append("live: " + cost_line(report.request, profile, answer.billing_weights))
    return report, "\n".join(said)
