"""The one renderer of job scripts: shebang, ``#SBATCH`` header, setup lines, run line;
what ``--dry-run`` prints is what sbatch gets. Pure.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from .errors import InvalidRequest
from .flags import ENGINE_FLAGS, SBATCH_FLAGS
from .profiles import ClusterProfile
from .resources import ResourceRequest, sbatch_text

DEFAULT_SHEBANG = "#!/bin/bash"


@dataclass(frozen=True)
class JobParts:
    """What one job adds to the request: its name, the engine's directives, its lines."""

    job_name: str | None = None
    engine: tuple[tuple[str, str], ...] = ()  # directives the engine needs (logs, signal)
    notes: tuple[str, ...] = ()  # comment lines under the header, for the reader
    prologue: tuple[str, ...] = ()  # lines before the setup ("umask 077", "set -e")
    run: tuple[str, ...] = ()  # what the job runs


def _value(field: str, request: ResourceRequest, profile: ClusterProfile | None) -> str | None:
    """A field's ``#SBATCH`` value; on a gres site, --gpus-per-node is said in --gres."""
    on_gres = profile is not None and profile.gpu_flag == "gres"
    if field == "gres":
        items = [item for item in (request.gres or "").split(",") if item]
        if request.gpus_per_node is not None and on_gres:
            items = [item for item in items if not item.startswith("gpu")]
            items.append(f"gpu:{request.gpus_per_node}")
        return ",".join(items) or None
    value = getattr(request, field)
    if value is None or (field == "gpus_per_node" and on_gres):
        return None
    return sbatch_text(field, value)


def directives(request: ResourceRequest, profile: ClusterProfile | None = None,
               job_name: str | None = None) -> list[tuple[str, str]]:
    """The (flag, value) pairs of the request, in the table's order; one flag, one line."""
    pairs: list[tuple[str, str]] = [("job-name", job_name)] if job_name else []
    for flag in SBATCH_FLAGS:
        value = _value(flag.field, request, profile)
        if value is not None:
            pairs.append((flag.name, value))
    taken = {flag for flag, _ in pairs}
    if profile is not None:
        pairs += [pair for pair in profile.extra_directives if pair[0] not in taken]
    pairs += list(request.extra)
    return pairs


# What only Slurm gives a job: tasks and nodes beyond one, GPUs, a memory limit, waiting for
# other jobs. The local executor runs one process with no GPU (CUDA_VISIBLE_DEVICES=""),
# no limit but the time, at once.
SLURM_ONLY = frozenset({"nodes", "N", "ntasks-per-node", "ntasks", "n", "gpus-per-node",
                        "gpus", "G", "gpus-per-task", "mem", "mem-per-cpu", "mem-per-gpu",
                        "dependency", "d"})
ONE = frozenset({"nodes", "N", "ntasks-per-node", "ntasks", "n"})  # "1" is what runs here


def slurm_only(request: ResourceRequest) -> list[str]:
    """The request's flags a local run cannot honour, as typed (``--nodes 2``, ``-d ...``),
    in the header's order; a GPU in ``--gres`` too."""
    named = []
    for flag, value in directives(request):
        if flag == "gres":
            value = ",".join(item for item in value.split(",") if item.startswith("gpu"))
        elif flag not in SLURM_ONLY or (flag in ONE and value == "1"):
            continue
        if value:
            named.append(f"{'-' if len(flag) == 1 else '--'}{flag} {value}")
    return named


def _line(flag: str, value: str) -> str:
    short = len(flag) == 1
    # sbatch reads directive values with shell-like quoting; an unquoted '#' starts a comment
    given = f"{' ' if short else '='}{shlex.quote(value)}" if value else ""
    return f"#SBATCH {'-' if short else '--'}{flag}{given}"


def header_lines(request: ResourceRequest, profile: ClusterProfile | None = None,
                 job_name: str | None = None,
                 engine: Iterable[tuple[str, str]] = ()) -> list[str]:
    """The ``#SBATCH`` lines; ``engine`` (log paths, signal) come last and are not overridable."""
    engine = tuple(engine)
    pairs = directives(request, profile, job_name)
    if engine:
        clashes = [flag for flag, _ in pairs if flag in ENGINE_FLAGS]
        if clashes and clashes[0] in {"array", "a"}:
            raise InvalidRequest(
                f"#SBATCH --{clashes[0]}: a job array here is a sweep: use %%sbatch --sweep "
                "NAME=V1,V2 (each task gets its value as a variable) and remove that line")
        if clashes:
            raise InvalidRequest(
                f"#SBATCH --{clashes[0]}: hpc_magics sets the job's log files and signals "
                "itself (the logs are in the job folder): remove that line")
    return [_line(flag, value) for flag, value in (*pairs, *engine)]


def render(request: ResourceRequest, profile: ClusterProfile, parts: JobParts) -> str:
    """The whole job script, exactly as sbatch gets it."""
    lines = [profile.shebang or DEFAULT_SHEBANG]
    lines += header_lines(request, profile, parts.job_name, parts.engine)
    if parts.notes:
        lines += ["", *(f"# {note}" if note else "#" for note in parts.notes)]
    if parts.prologue:
        lines += ["", *parts.prologue]
    # each shell line under where it came from (a dry run shows what a profile file adds)
    from_profile = list(dict.fromkeys(profile.setup))
    from_request = [line for line in dict.fromkeys(request.setup) if line not in from_profile]
    if from_profile:
        lines += ["", f"# Setup from profile {profile.name}"
                  + (f": {profile.source}" if profile.source else ""), *from_profile]
    if from_request:
        lines += ["", "# Setup from the request (--setup, %hpc_resources or the notebook's "
                  "metadata)", *from_request]
    if parts.run:
        lines += ["", *parts.run]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------- a %%sbatch cell's job
def log_name(job: str, task: str | int, kind: str) -> str:
    """A task's log file name (``kind``: out or err), as the job script gives it to sbatch
    and srun (``%j`` or ``%A_%a``, ``%t``) and as the notebook reads it (an id, a rank):
    submitit's ``JobPaths`` naming, without its ``Path`` work on every widget refresh."""
    return f"{job}_{task}_log.{kind}"


def cell_parts(folder: str, python: str, job_name: str, *, signal: str,
               array: str | None = None) -> JobParts:
    """The parts submitit's engine needs on the node. Always an srun step, one task too:
    time-limit signals reach a step's processes, not the batch shell's children."""
    job = "%A_%a" if array else "%j"
    literal = folder.replace("%", "%%")  # sbatch and srun expand %j, %x, ... in file names

    def log(task: str, kind: str) -> str:
        return f"{literal}/{log_name(job, task, kind)}"

    stdout, stderr = log("%t", "out"), log("%t", "err")
    engine: list[tuple[str, str]] = [("array", array)] if array else []
    engine += [("output", log("0", "out")), ("error", log("0", "err")),
               ("signal", signal), ("open-mode", "append")]
    srun = shlex.join(["srun", "--unbuffered", "--output", stdout, "--error", stderr])
    # submitit's engine (submitit.core._submit), started without its eager numpy import
    engine_command = f"{python} -u -m hpc_magics.node.engine {shlex.quote(folder)}"
    cell = f"{srun} {engine_command}"
    return JobParts(
        job_name=job_name,
        engine=tuple(engine),
        notes=("hpc_magics: runs the %%sbatch cell (job.py) through submitit's engine;",
               "results.pkl and output.txt come back to the notebook."),
        # the job's files stay private to the user, like its folder
        prologue=("umask 077",),
        run=("export SUBMITIT_EXECUTOR=slurm", cell),
    )
