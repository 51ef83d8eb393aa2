"""A cell at HPC scale: several tasks (``--gather``), checkpoint and requeue
(``--checkpoint``, ``--chain``), node-local data (``--stage``, ``--stage-back``): the
options, their checks and their lines in the job script. The node side: ``node/task.py``,
``node/staging.py``.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InvalidRequest

if TYPE_CHECKING:  # a type only: the job's runner imports this module on the node
    from .jobscript import JobParts

DEFAULT_MARGIN_S = 60  # Slurm signals with about a minute's granularity
DEFAULT_CHAIN = 3  # requeues allowed with --checkpoint when --chain is not given
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar", ".zip")
STAGING_MODULE = "hpc_magics.node.staging"
STAGE_TOKEN_VARIABLE = "HPC_MAGICS_STAGE_TOKEN"  # set by the job script, read on the nodes
# one task on every node of the job, whatever the cell's own task layout
EVERY_NODE = ('srun --nodes="$SLURM_JOB_NUM_NODES" --ntasks="$SLURM_JOB_NUM_NODES" '
              "--ntasks-per-node=1")


@dataclass(frozen=True)
class ScaleOptions:
    gather: tuple[str, ...] = ()  # names every rank sends back, as lists indexed by rank
    checkpoint: tuple[str, ...] = ()  # names saved before the limit, restored after requeue
    checkpoint_margin_s: int = DEFAULT_MARGIN_S
    chain: int = 0  # requeues allowed
    stage: tuple[str, ...] = ()  # absolute paths copied to every node's local storage
    stage_back: str | None = None  # absolute folder that stage_out is copied to at the end

    @property
    def active(self) -> bool:
        return bool(self.gather or self.checkpoint or self.stage or self.stage_back)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> ScaleOptions:
        known = {key: value for key, value in (data or {}).items()
                 if key in cls.__dataclass_fields__}
        for key in ("gather", "checkpoint", "stage"):
            known[key] = tuple(known.get(key) or ())
        return cls(**known)


def staged_name(path: str) -> str:
    """The key of ``staged`` and the folder under the node-local root: the base name,
    an archive's without its suffix (``data.tar.gz`` → ``data``)."""
    base = Path(path.rstrip("/")).name
    suffix = next((s for s in ARCHIVE_SUFFIXES
                   if base.lower().endswith(s) and len(base) > len(s)), "")
    return base[: len(base) - len(suffix)]


def is_archive(path: str) -> bool:
    return path.lower().endswith(ARCHIVE_SUFFIXES)


def _names(text: str | None, flag: str) -> tuple[str, ...]:
    if not text:
        return ()
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    bad = [name for name in names if not name.isidentifier()]
    if bad or not names:
        raise InvalidRequest(f"{flag} {text!r}: give variable names separated by commas, "
                             f"e.g. {flag} loss,weights")
    return names


def options(*, gather: str | None = None, checkpoint: str | None = None,
            margin_s: int | None = None, chain: int | None = None,
            stage: Iterable[str] | None = None, stage_back: str | None = None,
            time_limit_s: int | None = None) -> ScaleOptions:
    """The options from the magic's values; ``InvalidRequest`` names the first bad one."""
    checkpointed = _names(checkpoint, "--checkpoint")
    if margin_s is not None and margin_s < 0:
        raise InvalidRequest(f"--checkpoint-margin {margin_s}: give seconds, 0 or more")
    if chain is not None and chain < 0:
        raise InvalidRequest(f"--chain {chain}: give the number of requeues allowed, 0 or more")
    if (margin_s is not None or chain is not None) and not checkpointed:
        raise InvalidRequest("--checkpoint-margin and --chain need --checkpoint NAMES "
                             "(the variables to save before the time limit)")
    margin = DEFAULT_MARGIN_S if margin_s is None else margin_s
    if checkpointed and time_limit_s is not None and margin >= time_limit_s:
        raise InvalidRequest(
            f"--checkpoint-margin {margin}s is not shorter than the time limit "
            f"({time_limit_s}s): the job would be signalled at once; give a smaller margin "
            "or a longer -t")
    staged: list[str] = []
    for path in stage or ():
        if not os.path.exists(path):
            raise InvalidRequest(f"--stage {path}: no such file or folder")
        staged.append(os.path.abspath(path))
    names = [staged_name(path) for path in staged]
    duplicate = next((name for name in names if names.count(name) > 1), None)
    if duplicate:
        raise InvalidRequest(f"--stage: two inputs would both be staged as {duplicate!r}: "
                             "rename one of them")
    back = None
    if stage_back is not None:
        back = os.path.abspath(stage_back)
        if os.path.exists(back) and not os.path.isdir(back):
            raise InvalidRequest(f"--stage-back {stage_back}: is a file; give a folder "
                                 "(created if missing) that stage_out is copied into")
        parent = os.path.dirname(back)
        if not os.path.exists(parent):
            raise InvalidRequest(f"--stage-back {stage_back}: its parent folder {parent} "
                                 "does not exist")
    return ScaleOptions(
        gather=_names(gather, "--gather"), checkpoint=checkpointed,
        checkpoint_margin_s=margin,
        chain=(DEFAULT_CHAIN if chain is None else chain) if checkpointed else 0,
        stage=tuple(staged), stage_back=back)


def signal_directive(opts: ScaleOptions | None) -> str:
    """``--signal``: USR2 ``margin`` seconds before the limit with --checkpoint; else at
    the limit itself (a cell that is not checkpointable ends as TIMEOUT, not FAILED)."""
    margin = opts.checkpoint_margin_s if opts is not None and opts.checkpoint else 0
    return f"USR2@{margin}"


def scaled_parts(parts: JobParts, opts: ScaleOptions, python: str) -> JobParts:
    """``parts`` of a cell's job with the options' lines: ``--requeue``, staging steps on
    every node, a trap that copies results back when the limit stops the job."""
    engine = parts.engine + ((("requeue", ""),) if opts.checkpoint else ())
    if not (opts.stage or opts.stage_back):
        return replace(parts, engine=engine)
    *setup, cell = parts.run
    staging = f"{python} -m {STAGING_MODULE}"
    run = [
        *setup,
        "# the /tmp fallback's name ends in a random part other users cannot guess (they "
        "cannot read this job's environment)",
        f"export {STAGE_TOKEN_VARIABLE}=\"$(od -An -N8 -tx1 /dev/urandom | tr -d ' \\n')\""]
    if opts.stage:
        run += ["# Staging: the inputs, copied (archives extracted) to node-local storage on "
                "every node ($SLURM_TMPDIR, else a private folder under /tmp)",
                f"{EVERY_NODE} {staging} in {shlex.join(opts.stage)}"]
    if opts.stage_back:
        back = f"{staging} back {shlex.quote(opts.stage_back)}"
        run += ["# stage_out comes back at the end, also when the time limit stops the job",
                f"hpc_magics_stop() {{ {back}; {staging} clean; exit 143; }}",
                "trap hpc_magics_stop TERM",
                f"{cell} &", "wait $!", "status=$?", "trap - TERM", back]
    else:
        run += [cell, "status=$?"]
    run += ["# the private folders under /tmp go (a site's $SLURM_TMPDIR is its own to clean)",
            f"{EVERY_NODE} {staging} clean", "exit $status"]
    return replace(parts, engine=engine, run=tuple(run))


def injected_names(opts: ScaleOptions) -> frozenset[str]:
    """The variables the job puts into the cell's namespace (``node/task.py``): a cell
    may read them without the notebook defining them."""
    names = {"rank", "local_rank", "world_size"}
    if opts.checkpoint:
        names.add("resumed")
    if opts.stage or opts.stage_back:
        names |= {"stage_dir", "staged", "stage_out"}
    return frozenset(names)
