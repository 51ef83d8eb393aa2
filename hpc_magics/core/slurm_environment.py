"""Which of the kernel's Slurm variables reach ``sbatch``, as data (the docs' table is this one).

The user's own defaults (``SBATCH_*``, ``SRUN_*``, ``SLURM_CONF``, ...) are set on purpose and
stay; what a surrounding job or step leaks into its children (the OUTPUT ENVIRONMENT
VARIABLES of sbatch(1), srun(1), salloc(1)) goes: a server inside a job would otherwise hand
its job's id, nodes and memory to every job it submits. sbatch applies ``SBATCH_*`` over the
script's ``#SBATCH`` lines, so :func:`for_sbatch` drops a variable the script sets itself.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase, translate
from typing import Any

from .directives import parse
from .errors import InvalidRequest
from .resources import ResourceRequest, parse_field

# (pattern, why it goes). fnmatch patterns, matched case-sensitively.
LEAKED: tuple[tuple[str, str], ...] = (
    ("SLURM_JOB_*", "the surrounding job's identity, account, partition and node list"),
    ("SLURM_JOBID", "the surrounding job's id (old spelling)"),
    ("SLURM_ARRAY_*", "the surrounding array task's place in its array"),
    ("SLURM_HET_SIZE", "the surrounding heterogeneous job's layout"),
    ("SLURM_*_HET_GROUP_*", "the surrounding heterogeneous job's layout"),
    ("SLURM_NODELIST", "the surrounding job's nodes"),
    ("SLURM_NNODES", "the surrounding job's node count"),
    ("SLURM_NPROCS", "the surrounding job's task count"),
    ("SLURM_NTASKS*", "the surrounding job's task layout"),
    ("SLURM_TASKS_PER_NODE", "the surrounding job's task layout"),
    ("SLURM_CPUS_*", "the surrounding job's CPUs per task and node"),
    ("SLURM_CPU_BIND*", "the surrounding step's CPU binding"),
    ("SLURM_CPU_FREQ_REQ", "the surrounding step's CPU frequency"),
    ("SLURM_MEM_PER_*", "the surrounding job's memory (srun in the new job would inherit it)"),
    ("SLURM_MEM_BIND*", "the surrounding step's memory binding"),
    ("SBATCH_MEM_BIND*", "set by sbatch inside a batch job, not by the user"),
    ("SLURM_GPUS*", "the surrounding job's GPUs"),
    ("SLURM_GPU_BIND", "the surrounding job's GPU binding"),
    ("SLURM_GPU_FREQ", "the surrounding job's GPU frequency"),
    ("SLURM_SHARDS_ON_NODE", "the surrounding job's GPU shards"),
    ("SLURM_DISTRIBUTION", "the surrounding job's task distribution"),
    ("SLURM_DIST_PLANESIZE", "the surrounding job's task distribution"),
    ("SLURM_OVERCOMMIT", "the surrounding job's overcommit"),
    ("SLURM_THREADS_PER_CORE", "the surrounding job's threads per core"),
    ("SLURM_EXPORT_ENV", "the surrounding job's --export"),
    ("SLURM_PROFILE", "the surrounding job's --profile"),
    ("SLURM_CONTAINER", "the surrounding job's --container"),
    ("SLURM_CLUSTER_NAME", "set inside jobs; the cluster is chosen by SLURM_CONF/--clusters"),
    ("SLURM_SUBMIT_*", "where the surrounding job was submitted from"),
    ("SLURM_RESTART_COUNT", "how often the surrounding job was requeued"),
    ("SLURM_PRIO_PROCESS", "the surrounding job's scheduling priority"),
    ("SLURM_UMASK", "the surrounding job's umask"),
    ("SLURM_TOPOLOGY_ADDR*", "the node the surrounding step runs on"),
    ("SLURM_NODE_ALIASES", "the surrounding job's node addresses"),
    ("SLURMD_NODENAME", "the node the surrounding step runs on"),
    ("SLURM_STEP*", "the surrounding step's id, nodes and tasks"),
    ("SLURM_PROCID", "the surrounding task's rank"),
    ("SLURM_LOCALID", "the surrounding task's rank on its node"),
    ("SLURM_NODEID", "the surrounding task's node index"),
    ("SLURM_GTIDS", "the surrounding step's task ids"),
    ("SLURM_TASK_PID", "the surrounding task's process id"),
    ("SLURM_LAUNCH_NODE_IPADDR", "the surrounding step's launcher"),
    ("SLURM_SRUN_COMM_*", "the surrounding step's launcher"),
    ("SLURM_PTY_*", "the surrounding interactive step's terminal"),
    ("SLURM_MPI_TYPE", "the surrounding step's MPI wiring"),
    ("SRUN_DEBUG", "set by srun for its tasks"),
    ("PMI_*", "the surrounding step's MPI wiring"),
    ("PMIX_*", "the surrounding step's MPI wiring"),
    ("OMPI_*", "the surrounding step's MPI wiring"),
)

# The user's settings for what the commands print: kept for sbatch and srun (the job is the
# user's, with the user's settings), dropped from every command whose answer hpc_magics
# reads (squeue, sacct, sinfo, scontrol, ...): they would change its fields or its jobs.
FORMATTING: tuple[tuple[str, str], ...] = (
    ("SLURM_TIME_FORMAT", "how every command prints times (relative, strftime)"),
    ("SQUEUE_*", "squeue's default format, sort and filters (states, users, partitions)"),
    ("SACCT_*", "sacct's default format and which clusters' jobs it lists"),
    ("SINFO_*", "sinfo's default format, sort and partition"),
    ("SCONTROL_*", "which partitions, nodes and clusters scontrol shows"),
)
# The commands that start a job (the user's environment travels to it): not readers.
STARTS_JOBS = frozenset({"sbatch", "srun", "salloc"})

# SBATCH_<NAME> is --<name> with '-' for '_' except these (sbatch(1), INPUT ENVIRONMENT).
# sbatch also reads SLURM_CLUSTERS as --clusters (a script's -M line gives way to neither).
_OPTION_OF = {"SBATCH_TIMELIMIT": "time", "SBATCH_ARRAY_INX": "array",
              "SBATCH_MEM_PER_NODE": "mem", "SBATCH_REQ_SWITCH": "switches",
              "SBATCH_WAIT4SWITCH": "switches", "SLURM_CLUSTERS": "clusters"}
# options sbatch refuses together: the script naming one displaces the variables of all
_EXCLUSIVE = ({"mem", "mem-per-cpu", "mem-per-gpu"}, {"requeue", "no-requeue"})

# The defaults validation and cost read: variable → the request's field.
REQUEST_FIELDS: tuple[tuple[str, str], ...] = (
    ("SBATCH_ACCOUNT", "account"), ("SBATCH_PARTITION", "partition"),
    ("SBATCH_TIMELIMIT", "time_s"), ("SBATCH_QOS", "qos"),
    ("SBATCH_CONSTRAINT", "constraint"), ("SBATCH_MEM_PER_NODE", "mem_mb"),
    ("SBATCH_GPUS_PER_NODE", "gpus_per_node"), ("SBATCH_GRES", "gres"),
)


def leak_reason(name: str, table: tuple[tuple[str, str], ...] = LEAKED) -> str | None:
    """Why ``name`` is a leak from a surrounding job (or, with ``table=FORMATTING``, changes
    what a command prints), or None when it is neither."""
    if not _any_pattern(table).match(name):  # most names: one regex, not one per pattern
        return None
    return next((why for pattern, why in table if fnmatchcase(name, pattern)), None)


@functools.cache
def _any_pattern(table: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    """One regex for all of ``table``'s patterns: every Slurm command scrubs the whole
    environment through :func:`leak_reason` (fnmatch pattern by pattern was ~1 ms a call)."""
    return re.compile("|".join(f"(?:{translate(pattern)})" for pattern, _ in table))


def option_of(name: str) -> str | None:
    """The sbatch long option an ``SBATCH_*`` variable stands for."""
    if not name.startswith("SBATCH_") and name not in _OPTION_OF:
        return None
    return _OPTION_OF.get(name, name[len("SBATCH_"):].lower().replace("_", "-"))


def script_options(script: str) -> set[str]:
    """The long names of the options the script's ``#SBATCH`` block sets (as sbatch reads it:
    up to the first line that is neither a comment nor blank)."""
    found: set[str] = set()
    with contextlib.suppress(InvalidRequest):  # sbatch refuses the script anyway
        found = {option.name for option in parse(script).options}
    for group in _EXCLUSIVE:
        if found & group:
            found |= group
    return found


def for_sbatch(environ: Mapping[str, str], script: str) -> dict[str, str]:
    """``environ`` without the ``SBATCH_*`` variables that would override the script's lines
    (leaks are the command door's to drop)."""
    options = {name: option_of(name) for name in environ}
    if not any(options.values()):  # no sbatch default set: nothing to drop, the script unread
        return dict(environ)
    taken = script_options(script)
    return {k: v for k, v in environ.items() if options[k] not in taken}


def overridden(environ: Mapping[str, str], script: str) -> list[str]:
    """The variables :func:`for_sbatch` drops, for the dry-run to name."""
    return sorted(set(environ) - set(for_sbatch(environ, script)))


def kept_names(environ: Iterable[str]) -> list[str]:
    """The Slurm variables of ``environ`` that reach sbatch (for the dry-run)."""
    return sorted(n for n in environ if n.startswith(("SBATCH_", "SALLOC_", "SRUN_", "SLURM_"))
                  and leak_reason(n) is None)


def with_defaults(request: ResourceRequest, environ: Mapping[str, str]
                  ) -> tuple[ResourceRequest, dict[str, str]]:
    """The request with the environment's defaults where it names nothing itself, and which
    variable filled which field (what sbatch would have applied, made visible)."""
    changes: dict[str, Any] = {}
    filled: dict[str, str] = {}
    for name, field in REQUEST_FIELDS:
        text = environ.get(name, "").strip()
        if not text or getattr(request, field) is not None or (
                field in {"gpus_per_node", "gres"} and request.gpus() is not None):
            continue
        try:
            changes[field] = parse_field(field, text)
        except InvalidRequest as error:
            raise InvalidRequest(f"{name}={text!r} in the environment: {error} (fix it, or "
                                 f"unset {name})") from None
        filled[field] = name
    return (request.changed(**changes) if changes else request), filled
