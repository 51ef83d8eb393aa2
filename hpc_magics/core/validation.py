"""Check a request against a profile and report every problem at once.

The policy (docs/validation.md): an **error** only for what the site would certainly refuse
(a documented hard limit, a partition that does not exist, a malformed value, a placeholder);
what the site fills in itself (a default account, a partition's default time) or merely
advises is at most a **warning** with the reason.  Each rule below is one small function of
(request, profile, partition) and the numbers it compares come from the profile's data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial

from .errors import refuse as refuse_lines
from .profiles import ClusterProfile, Partition
from .resources import ResourceRequest
from .units import UNLIMITED, format_memory, format_time, parse_memory

ERROR, WARNING = "error", "warning"
# "<ACCOUNT>", "<project>" left in a value. For accounts also "def-$USER" (sbatch does not
# expand variables in #SBATCH lines), "NAISSXXXX-YY-ZZZZ", "your_project" and upper-case
# words naming what to fill in (ACCOUNT, COMPUTE_CANADA_ACCOUNT, MY_PROJECT): Slurm keeps
# account names in lower case, so no site has such an account. Each profile adds its site's
# own placeholders (account_placeholders, account_placeholder_patterns).
PLACEHOLDER = re.compile(r".*<[^<>@]+>.*")
ACCOUNT_PLACEHOLDER = re.compile(
    r".*<[^<>]+>.*|.*\$\{?\w+\}?.*|.*X{3,}.*|your[_-]?(account|project|allocation)"
    r"|([A-Z]+[_-])*(ACCOUNT|PROJECT|ALLOCATION|GROUP|SPONSOR)([_-][A-Z]+)*")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a request or a script: ``field`` names the option (long
    spelling) or is "" for the whole; ``line``, the script's line when there is one;
    ``rule``, "limit" for the profile's rules, "syntax" for how sbatch reads a line."""
    severity: str
    field: str
    message: str
    line: int | None = None
    rule: str = "limit"

    def __str__(self) -> str:
        return f"{f'line {self.line}: ' if self.line else ''}{self.severity}: {self.message}"


Found = Iterator[Problem]
Landing = Partition | None  # the partition the job lands in, as resolve_partition finds it
_error, _warn = partial(Problem, ERROR), partial(Problem, WARNING)  # (option, message)


def resolve_partition(request: ResourceRequest, profile: ClusterProfile) -> Partition | None:
    """The partition the job lands in; with none named and no default, the most any
    partition allows (the site routes the job, so only a request no partition takes fails)."""
    if request.partition or profile.default_partition:
        return profile.partition(request.partition)
    return profile.envelope()


# ------------------------------------------------------------------ the rules
def partition_exists(request: ResourceRequest, profile: ClusterProfile,
                     partition: Landing) -> Found:
    if not (request.partition and profile.partitions
            and request.partition not in profile.partitions):
        return
    choices = ", ".join(profile.partitions)
    if not profile.partitions_complete:
        yield _warn("partition", f"partition {request.partition!r} is not in the "
                    f"{profile.name} profile (documented on {profile.documented_on or '?'}): "
                    f"check with sinfo; known: {choices}")
        return
    from .sites import profile_with_partition  # only on this path: reads the profiles

    other = profile_with_partition(request.partition)  # SDumont 2nd's lncc-h100 under sdumont
    fix = f"; it is {other}'s: use --profile {other}, or one" if other and other != profile.name \
        else ": use one"
    routed = "" if profile.default_partition else " (or leave -p out: the site routes jobs)"
    yield _error("partition", f"partition {request.partition!r} does not exist on "
                 f"{profile.name}{fix} of {choices}{routed}")


def time_limit(request: ResourceRequest, profile: ClusterProfile, partition: Landing) -> Found:
    if request.time_s is None:
        if profile.time_required:
            yield _warn("time", f"no time limit: {profile.name} gives the partition's default "
                        "time, which may be shorter than you need: add -t HH:MM:SS")
        return
    if partition and partition.max_time_s and (
            request.time_s == UNLIMITED or request.time_s > partition.max_time_s):
        yield _error("time", f"time {format_time(request.time_s)} exceeds the "
                     f"{format_time(partition.max_time_s)} limit of partition "
                     f"{partition.name!r}: ask for less or choose a longer partition")


def node_count(request: ResourceRequest, profile: ClusterProfile, partition: Landing) -> Found:
    if partition and partition.max_nodes and request.node_count > partition.max_nodes:
        yield _error("nodes", f"{request.node_count} nodes exceed the {partition.max_nodes}-node "
                     f"limit of partition {partition.name!r}")


def qos_needed(request: ResourceRequest, profile: ClusterProfile, partition: Landing) -> Found:
    if partition and partition.requires_qos and request.qos != partition.requires_qos:
        yield _error("qos", f"partition {partition.name!r} needs --qos={partition.requires_qos}")


def _cpus_on_a_node(request: ResourceRequest) -> int:
    """CPUs one node must hold: tasks per node x CPUs per task; --ntasks counts only when the
    job is held to one node (-N 1), else Slurm may spread the tasks."""
    tasks = request.ntasks_per_node
    total = request.extra_value("ntasks", "n")
    if tasks is None and request.nodes == 1 and total and total.isdigit():
        tasks = int(total)
    return (request.cpus_per_task or 1) * (tasks or 1)


def cpus_per_node(request: ResourceRequest, profile: ClusterProfile, partition: Landing) -> Found:
    if not (partition and partition.cpus_per_node):
        return
    cpus = _cpus_on_a_node(request)
    if cpus > partition.cpus_per_node:
        name = "cpus-per-task" if request.cpus_per_task else "ntasks-per-node"
        yield _error(name, f"{cpus} CPUs per node exceed the {partition.cpus_per_node} "
                     f"of partition {partition.name!r}: ask for at most "
                     f"{partition.cpus_per_node} a node (more nodes for more CPUs)")


# Less than the Python interpreter, submitit and the unpickled cell need: such a job dies
# of OOM at its start. Written mostly by users meaning GB, where a plain number is MB.
TOO_LITTLE_FOR_PYTHON_MB = 64


def memory(request: ResourceRequest, profile: ClusterProfile, partition: Landing) -> Found:
    if request.mem_mb and request.mem_mb < TOO_LITTLE_FOR_PYTHON_MB:  # sbatch takes it
        yield _warn("mem", f"--mem {request.mem_mb}M is {request.mem_mb} MB (sbatch's unit "
                    f"for a plain number), too little for Python: write {request.mem_mb}G "
                    "for gigabytes")
    if not (partition and partition.mem_per_node_mb):
        return
    limit = partition.mem_per_node_mb
    if request.mem_mb and request.mem_mb > limit:
        yield _error("mem", f"--mem {format_memory(request.mem_mb)} exceeds the "
                     f"{format_memory(limit)} a node of partition {partition.name!r} has "
                     "(--mem=0 asks for all of it)")
    per_cpu = request.extra_value("mem-per-cpu")
    if per_cpu:
        cpus = _cpus_on_a_node(request)
        total = parse_memory(per_cpu) * cpus
        if total > limit:
            yield _error("mem-per-cpu", f"--mem-per-cpu {per_cpu} x {cpus} CPUs = "
                         f"{format_memory(total)} exceeds the {format_memory(limit)} a node "
                         f"of partition {partition.name!r} has")


def gpu_request(request: ResourceRequest, profile: ClusterProfile, partition: Landing) -> Found:
    gpus = request.all_gpus()
    if gpus is None or partition is None or not profile.partitions:
        return
    if partition.gpus_per_node == 0:
        yield _error("gpus-per-node", f"partition {partition.name!r} has no GPUs: choose a GPU "
                     "partition or drop the GPU request")
        return
    limit = next((count for name, count in partition.gpus_per_type.items()
                  if name.lower() == (gpus.type or "").lower()), partition.gpus_per_node)
    if partition.gpu_counts and gpus.count not in partition.gpu_counts:
        counts = " or ".join(str(n) for n in partition.gpu_counts)
        yield _error("gpus-per-node", f"{gpus.count} GPUs per node: partition "
                     f"{partition.name!r} of {profile.name} schedules only {counts} GPUs "
                     "per node: ask for one of those")
    elif gpus.count > limit:
        kind = f" {gpus.type}" if gpus.type and partition.gpus_per_type else ""
        yield _error("gpus-per-node", f"{gpus.count}{kind} GPUs per node exceed the {limit} "
                     f"a node of partition {partition.name!r} has: ask for at most {limit} "
                     "a node (more nodes for more GPUs)")
    known = {t.lower(): t for t in partition.gpu_types}
    if gpus.type and partition.gpu_type_pattern and re.fullmatch(
            partition.gpu_type_pattern, gpus.type, re.IGNORECASE):
        return  # one of the site's other spellings (a MIG slice)
    if gpus.type and known and gpus.type.lower() not in known:
        yield _error("gpus-per-node", f"GPU type {gpus.type!r} does not exist in partition "
                     f"{partition.name!r}: use one of {', '.join(partition.gpu_types)}")
    elif gpus.type and known and gpus.type not in partition.gpu_types:
        yield _warn("gpus-per-node", f"GPU type {gpus.type!r} is spelled "
                    f"{known[gpus.type.lower()]!r} on {profile.name}")


def gpu_typing(request: ResourceRequest, profile: ClusterProfile, partition: Landing) -> Found:
    gpus, total = request.gpus(), request.extra_value("gpus", "G")
    typed = (gpus and gpus.type) or (total and ":" in total)
    if (gpus or total) and not typed and profile.gpu_type_required:
        yield _error("gpus-per-node", f"{profile.name} needs a typed GPU request like "
                     f"--gpus-per-node=A40:1 (types: {', '.join(profile.gpu_types())})")
    cpu_only = profile.gpu_constraint_for_cpu_only
    if (not gpus and not total and cpu_only and request.backend != "local"
            and cpu_only not in (request.constraint or "").replace("&", ",").split(",")):
        yield _error("gpus-per-node", f"{profile.name} is a GPU cluster: request GPUs with "
                     f"--gpus-per-node=TYPE:N, or add -C {cpu_only} for a CPU-only job")
    if (not gpus and not total and partition and partition.gpus_per_node
            and not partition.whole_node and "shared" in partition.name):
        yield _warn("gres", f"partition {partition.name!r} shares its nodes: without "
                    "--gres=gpu:N the job gets no GPU")


def account(request: ResourceRequest, profile: ClusterProfile, partition: Landing) -> Found:
    name = request.account
    example = f" (like {profile.account_example})" if profile.account_example else ""
    if name:
        # an account left as the guide printed it (def-someuser, <project>, MY_ACCOUNT)
        if (name.lower() in {p.lower() for p in profile.account_placeholders}
                or ACCOUNT_PLACEHOLDER.fullmatch(name) is not None
                or any(re.fullmatch(p, name, re.IGNORECASE)
                       for p in profile.account_placeholder_patterns)):
            yield _error("account", f"account {name!r} is a placeholder: use your own "
                         f"project{example}")
        elif profile.account_pattern and not re.fullmatch(profile.account_pattern, name):
            yield _warn("account", f"account {name!r} does not look like a project of "
                        f"{profile.name}{example}")
    elif profile.account_required and request.backend != "local":
        yield _warn("account", f"no -A/--account: Slurm charges your default {profile.name} "
                    f"account, and refuses the job if you have several: add -A "
                    f"{profile.account_example or 'PROJECT'}")


def legacy(request: ResourceRequest, profile: ClusterProfile, partition: Landing) -> Found:
    for feature in re.split(r"[,&|]", request.constraint or ""):
        advice = profile.legacy_constraints.get(feature.strip().strip("[]"))
        if advice:
            yield _warn("constraint", advice)
    if profile.retired:
        successor = (f" (check with --profile {profile.successor})"
                     if profile.successor and profile.successor not in profile.retired else "")
        yield _warn("profile", f"{profile.retired}{successor}")


RULES: tuple[Callable[[ResourceRequest, ClusterProfile, Landing], Found], ...] = (
    partition_exists, time_limit, node_count, qos_needed, cpus_per_node, memory,
    gpu_request, gpu_typing, account, legacy,
)


def check(request: ResourceRequest, profile: ClusterProfile) -> list[Problem]:
    """Every problem of ``request`` on ``profile``; errors first."""
    partition = resolve_partition(request, profile)
    problems = [problem for rule in RULES for problem in rule(request, profile, partition)]
    problems.sort(key=lambda p: p.severity != ERROR)
    return problems


# What sbatch also reads --clusters from. Naming only the cluster submitted from is harmless:
# sbatch answers ``ID;CLUSTER`` and the cluster is recorded.
CLUSTER_VARIABLES = ("SBATCH_CLUSTERS", "SLURM_CLUSTERS")


def not_yet(pairs: Iterable[tuple[str, str]], environ: Mapping[str, str],
            here: str) -> list[Problem]:
    """An error for ``--clusters`` that ``pairs`` (the job's directives, as rendered) or,
    where they set none, the environment give naming another cluster than ``here``:
    hpc_magics cannot follow a job there yet."""
    given = [(f"remove -M {value}" if flag == "M" else f"remove --clusters={value}", value)
             for flag, value in pairs if flag in {"clusters", "M"}]
    given = given or [(f"unset {variable} (it is {environ[variable]!r})", environ[variable])
                      for variable in CLUSTER_VARIABLES if environ.get(variable, "").strip()][:1]
    return [_error("clusters", f"several clusters are not supported yet: {fix}; the job goes "
                   f"to {here}, the cluster you submit from")
            for fix, value in given
            if {part.strip().lower() for part in value.split(",")} - {here.lower()}]


def refuse(problems: Iterable[Problem]) -> None:
    """Refuse the errors among ``problems`` in one line (warnings pass)."""
    refuse_lines([p.message for p in problems if p.severity == ERROR])
