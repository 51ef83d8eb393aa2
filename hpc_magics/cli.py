"""The ``hpc-magics`` command.  Each subcommand lives with its layer and is imported only
when used, so ``hpc-magics convert`` never loads the Slurm or Jupyter server stack.

To add a subcommand, add ``"name": ("module.path", "one-line help")`` to ``SUBCOMMANDS``; the
module provides ``add_parser(subcommands)`` which sets ``run=callable(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from .core.errors import HpcMagicsError

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "convert": ("hpc_magics.convert.command", "notebook → headless NAME.py + NAME.sbatch"),
    "submit": ("hpc_magics.notebook_submit", "run a whole notebook as one job"),
    "check": ("hpc_magics.checker.command", "check a job script's #SBATCH lines"),
    "profiles": ("hpc_magics.checker.profiles_command", "list, show or --draft cluster profiles"),
    "kernel": ("hpc_magics.kernel.command", "install a Jupyter kernel that runs as a Slurm job"),
    "doctor": ("hpc_magics.doctor.command", "check this installation, one line per check"),
}


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hpc-magics", description="Run notebooks on Slurm clusters."
    )
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # Import only the module of the subcommand asked for: the others may be heavy.
    wanted = [a for a in argv if a in SUBCOMMANDS][:1]
    for name, (module, summary) in SUBCOMMANDS.items():
        if name in wanted:
            importlib.import_module(module).add_parser(subcommands)
        else:
            subcommands.add_parser(name, help=summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(arguments).parse_args(arguments)
    try:
        status = int(args.run(args))
        sys.stdout.flush()  # a closed pipe is found here, not at exit
        return status
    except HpcMagicsError as error:
        print(f"hpc-magics {args.command}: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader went (``| head``): stop quietly, as the Python documentation's recipe
        # (signal module, "Note on SIGPIPE"); stdout to devnull, so exiting flushes nothing
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
