"""``hpc-magics convert NB.ipynb [-o DIR] [--profile P] [sbatch flags]``: write NAME.py and
NAME.sbatch."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core.flags import add_flag_arguments, flag_values
from ..core.resources import updated
from ..core.validation import ERROR, check
from ..jobfolder.files import write_atomically
from .batch import job_for_notebook, render_sbatch
from .kernelspec import script_world
from .script import ConversionError, convert_notebook, read_notebook


@dataclass(frozen=True)
class Written:
    script: Path
    sbatch: Path
    removed_statements: int
    warnings: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()  # the request's, as the .sbatch file's notes say them
    has_errors: bool = False


def convert_file(
    notebook: Path, output_dir: Path | None = None, profile: str | None = None,
    interpreter: str | None = None, comment_removed: bool = True, strict: bool = False,
    flags: Mapping[str, Any] | None = None, force: bool = False) -> Written:
    """``flags``: raw flag texts by request field (as ``-t 10`` gives ``time_s="10"``), over
    the notebook's metadata and the profile's defaults; ``None`` values are left out.
    An existing NAME.py or NAME.sbatch that differs is replaced only with ``force``: it may
    be the user's own edit of an earlier conversion."""
    data = read_notebook(notebook)
    name = notebook.stem
    try:
        conversion = convert_notebook(data, name, comment_removed=comment_removed, strict=strict)
    except ConversionError as error:
        raise ConversionError(f"{notebook}: {error}") from None
    job = job_for_notebook(data.get("metadata", {}), profile, source=notebook)
    given = {field: value for field, value in (flags or {}).items() if value is not None}
    if given:
        job = replace(job, request=updated(job.request, given),
                      origin=f"the command line over {job.origin}")
    folder = output_dir or notebook.parent
    folder.mkdir(parents=True, exist_ok=True)
    script, sbatch = folder / f"{name}.py", folder / f"{name}.sbatch"
    # the notebook's kernel's interpreter and world, not this process's (core/notebook_world)
    python, world = script_world(data, interpreter, job.profile.environment)
    texts = {script: conversion.script,
             sbatch: render_sbatch(name, script.name, job, python, world)}
    if not force:
        for path, text in texts.items():
            if _differs(path, text):
                raise ConversionError(f"{path} exists and differs from this conversion: "
                                      "nothing was written (--force replaces it)")
    for path, text in texts.items():
        # whole or not at all (an interrupted run never leaves half a script); a user's
        # file, so their umask decides who reads it, as for any file they make
        write_atomically(path, text, mode=0o666)
    problems = check(job.request, job.profile)
    return Written(script, sbatch, sum(len(r) for r in conversion.removed), conversion.warnings,
                   tuple(str(p) for p in problems), any(p.severity == ERROR for p in problems))


def _differs(path: Path, text: str) -> bool:
    """``path`` holds something else than ``text`` (a missing file differs from nothing)."""
    try:
        return path.read_text(encoding="utf-8") != text
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError):
        return True


def add_parser(subcommands: argparse._SubParsersAction) -> None:
    parser = subcommands.add_parser(
        "convert", help="notebook → headless NAME.py + NAME.sbatch",
        description="Convert a notebook into a script plain python runs with no display "
        "(plots stripped, computation kept, magics translated) and an sbatch file.")
    parser.add_argument("notebook", type=Path, help="the .ipynb file")
    parser.add_argument("-o", "--output-dir", type=Path, default=None,
                        help="folder for NAME.py and NAME.sbatch (default: the notebook's)")
    parser.add_argument("--profile", default=None,
                        help="cluster profile for the sbatch header (default: the notebook's "
                        "metadata, else 'generic')")
    # The same flags as %%sbatch and `hpc-magics submit`, from the one table.
    add_flag_arguments(parser, "shell line run before the script, e.g. 'module load X' "
                               "(repeatable)")
    parser.add_argument("--python", dest="interpreter", default=None,
                        help="interpreter command in the run line (default: the interpreter "
                        "of the notebook's kernel, else python)")
    parser.add_argument("--delete-removed", action="store_true",
                        help="delete display code instead of commenting it out")
    parser.add_argument("--force", action="store_true",
                        help="replace an existing NAME.py or NAME.sbatch that differs "
                        "(default: refuse, writing nothing)")
    parser.add_argument("--strict", action="store_true",
                        help="refuse a notebook with a cell that is not Python (default: keep "
                        "the cell as a comment and warn)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    written = convert_file(
        args.notebook, args.output_dir, args.profile, args.interpreter,
        comment_removed=not args.delete_removed, strict=args.strict, force=args.force,
        flags=flag_values(args))
    for warning in written.warnings:
        print(f"warning: {args.notebook}: {warning}", file=sys.stderr)
    print(f"wrote {written.script} ({written.removed_statements} display statements removed)")
    print(f"wrote {written.sbatch}")
    # Said here too, not only in the file: sbatch would refuse an error at submit time.
    for problem in written.problems:
        print(f"{written.sbatch.name}: {problem}", file=sys.stderr)
    return 1 if written.has_errors else 0
