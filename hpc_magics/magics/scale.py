"""``%%sbatch`` arguments for cells at scale: ``--gather``, ``--checkpoint``,
``--checkpoint-margin``, ``--chain``, ``--stage``, ``--stage-back`` (``core/scale.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from .lazy import lazy_module

if TYPE_CHECKING:
    from ..core import resources, scale, units
    from ..core.resources import ResourceRequest
else:  # imported on first use (see lazy.py)
    scale = lazy_module("hpc_magics.core.scale")
    units = lazy_module("hpc_magics.core.units")
    resources = lazy_module("hpc_magics.core.resources")


def scale_flags() -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    return [
        (("--gather",), {"metavar": "NAMES",
                         "help": "with several tasks: bring these names back from every rank, "
                                 "each as a list indexed by rank (default: rank 0's results "
                                 "only)"}),
        (("--checkpoint",), {"metavar": "NAMES",
                             "help": "save these names before the time limit and requeue; the "
                                     "cell runs again with them restored and resumed=True"}),
        (("--checkpoint-margin",), {"type": int, "metavar": "SECONDS",
                                    "help": "signal this long before the limit "
                                            f"(default {scale.DEFAULT_MARGIN_S})"}),
        (("--chain",), {"type": int, "metavar": "N",
                        "help": "requeues allowed with --checkpoint "
                                f"(default {scale.DEFAULT_CHAIN})"}),
        (("--stage",), {"action": "append", "metavar": "PATH",
                        "help": "copy a file or folder (or extract a .tar/.tar.gz/.zip) to "
                                "node-local storage on every node first (repeatable); the cell "
                                "gets staged[NAME] and stage_dir"}),
        (("--stage-back",), {"metavar": "PATH",
                             "help": "copy the node-local folder stage_out to PATH at the end, "
                                     "also when the time limit stops the job"}),
    ]


def options_from_args(args: Any, request: ResourceRequest, backend: str) -> scale.ScaleOptions:
    """The options, checked before submission."""
    limit = request.time_s if request.time_s not in (None, units.UNLIMITED) else None
    opts = scale.options(gather=args.gather, checkpoint=args.checkpoint,
                         margin_s=args.checkpoint_margin, chain=args.chain,
                         stage=[resources._unquote(path) for path in args.stage or ()],
                         stage_back=args.stage_back and resources._unquote(args.stage_back),
                         time_limit_s=limit)
    if backend == "local" and (opts.checkpoint or opts.stage or opts.stage_back):
        raise UsageError("--checkpoint, --stage and --stage-back need Slurm (signals, "
                         "requeue, node-local storage): use --backend slurm on a cluster")
    return opts
