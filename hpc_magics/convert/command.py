"""``hpc-magics convert NB.ipynb [-o DIR] [--profile P]``: write NAME.py and NAME.sbatch."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from .batch import job_for_notebook, render_sbatch
from .script import ConversionError, convert_notebook, read_notebook


@dataclass(frozen=True)
class Written:
    script: Path
    sbatch: Path
    removed_statements: int
    warnings: tuple[str, ...] = ()


def convert_file(
    notebook: Path,
    output_dir: Path | None = None,
    profile: str | None = None,
    interpreter: str = "python",
    comment_removed: bool = True,
    strict: bool = False,
) -> Written:
    data = read_notebook(notebook)
    name = notebook.stem
    try:
        conversion = convert_notebook(data, name, comment_removed=comment_removed, strict=strict)
    except ConversionError as error:
        raise ConversionError(f"{notebook}: {error}") from None
    job = job_for_notebook(data.get("metadata", {}), profile)
    folder = output_dir or notebook.parent
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / f"{name}.py"
    sbatch = folder / f"{name}.sbatch"
    script.write_text(conversion.script, encoding="utf-8")
    sbatch.write_text(render_sbatch(name, script.name, job, interpreter), encoding="utf-8")
    return Written(script, sbatch, sum(len(r) for r in conversion.removed), conversion.warnings)


def add_parser(subcommands: argparse._SubParsersAction) -> None:
    parser = subcommands.add_parser(
        "convert",
        help="notebook → headless NAME.py + NAME.sbatch",
        description="Convert a notebook into a script plain python runs with no display "
        "(plots stripped, computation kept, magics translated) and an sbatch file.",
    )
    parser.add_argument("notebook", type=Path, help="the .ipynb file")
    parser.add_argument(
        "-o",
        "--output-dir",
        type=Path,
        default=None,
        help="folder for NAME.py and NAME.sbatch (default: the notebook's)",
    )
    parser.add_argument(
        "--profile",
        default=None,
        help="cluster profile for the sbatch header (default: the notebook's "
        "metadata, else 'generic')",
    )
    parser.add_argument(
        "--python",
        dest="interpreter",
        default="python",
        help="interpreter command in the run line (default: python)",
    )
    parser.add_argument(
        "--delete-removed",
        action="store_true",
        help="delete display code instead of commenting it out",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse a notebook with a cell that is not Python (default: keep the cell as "
        "a comment and warn)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    written = convert_file(
        args.notebook,
        args.output_dir,
        args.profile,
        args.interpreter,
        comment_removed=not args.delete_removed,
        strict=args.strict,
    )
    for warning in written.warnings:
        print(f"warning: {args.notebook}: {warning}", file=sys.stderr)
    print(f"wrote {written.script} ({written.removed_statements} display statements removed)")
    print(f"wrote {written.sbatch}")
    return 0
