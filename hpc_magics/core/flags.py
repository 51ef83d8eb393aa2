"""The sbatch flags hpc_magics models, declared once: for the ``#SBATCH`` reader, the
request's fields, the renderer (in this order) and the magics' arguments. Other flags pass
through to sbatch untouched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SbatchFlag:
    name: str  # sbatch's long spelling, without "--"
    short: str | None  # sbatch's one-letter spelling, without "-"
    field: str  # the ResourceRequest field it sets
    help: str

    @property
    def dest(self) -> str:
        """The argparse destination of ``--name``."""
        return self.name.replace("-", "_")

    @property
    def spellings(self) -> tuple[str, ...]:
        """Command-line spellings, short first (argparse's convention)."""
        return ((f"-{self.short}",) if self.short else ()) + (f"--{self.name}",)


# In the order the rendered #SBATCH header lists them.
SBATCH_FLAGS: tuple[SbatchFlag, ...] = (
    SbatchFlag("account", "A", "account", "project account to charge"),
    SbatchFlag("partition", "p", "partition", "partition (queue) to run in"),
    SbatchFlag("qos", "q", "qos", "quality of service"),
    SbatchFlag("time", "t", "time_s",
               "time limit: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM:SS, or 2h, 90min"),
    SbatchFlag("nodes", "N", "nodes", "number of nodes"),
    SbatchFlag("ntasks-per-node", None, "ntasks_per_node", "tasks (processes) per node"),
    SbatchFlag("cpus-per-task", "c", "cpus_per_task", "CPU cores per task"),
    SbatchFlag("mem", None, "mem_mb", "memory per node: 4G, 500M, 0 for all of it"),
    SbatchFlag("gpus-per-node", None, "gpus_per_node", "GPUs per node: N or TYPE:N (A40:1)"),
    SbatchFlag("gres", None, "gres", "generic resources, as sbatch: gpu:v100:2"),
    SbatchFlag("constraint", "C", "constraint", "node features, as sbatch: -C gpu"),
    SbatchFlag("dependency", "d", "dependency",
               "start after other jobs, as sbatch: afterok:123[:456]; in a cell, a job folder "
               "name or handle variable also stands for an id (afterok:prep)"),
)


def add_flag_arguments(parser: Any, setup_help: str) -> None:
    """The modelled sbatch flags and ``--setup``, as every command that makes a request
    takes them (the magics take the same through ``magics/arguments.py``)."""
    for flag in SBATCH_FLAGS:
        parser.add_argument(*flag.spellings, default=None, help=flag.help)
    parser.add_argument("--setup", action="append", metavar="COMMAND", help=setup_help)


def flag_values(args: Any) -> dict[str, Any]:
    """Parsed arguments' resource flags and ``--setup``, keyed by request field, as
    ``resources.updated`` takes them."""
    return {flag.field: getattr(args, flag.dest, None) for flag in SBATCH_FLAGS} | {
        "setup": args.setup}


# Every spelling users may write (long and short) → request field.
FLAG_FIELDS: dict[str, str] = {spelling: flag.field for flag in SBATCH_FLAGS
                               for spelling in (flag.name, flag.short) if spelling}

# Flags the job script sets for the engine (submitit's logs, signal, append mode, arrays):
# a cell's own #SBATCH line must not move them, or the job's output is lost.
ENGINE_FLAGS = frozenset({"output", "o", "error", "e", "open-mode", "signal", "array", "a"})
