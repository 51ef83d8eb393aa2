"""``hpc-magics doctor``: check the installation where it runs, one line per check.

Exit status 0 when every line holds or only warns, 1 when one fails (2: bad arguments).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core.flags import SBATCH_FLAGS
from ..core.jobs_root import jobs_root
from ..core.profiles import load_profile
from ..core.resources import ResourceRequest, updated
from ..core.sites import detected_profile
from .checks import Setting

# what the test job shares with the user's jobs: where it may run and who pays
JOB_FLAGS = ("account", "partition", "qos")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def add_parser(subcommands: argparse._SubParsersAction) -> None:
    parser = subcommands.add_parser(
        "doctor", help="check this installation: Slurm, profile, jobs folder, server, kernels",
        description="Check the installation where it runs, one line each: what holds, or "
                    "what to fix. Submits one test job of a few seconds (--no-job: none). "
                    "Exit status 0 when nothing fails (warnings do not), 1 otherwise.")
    parser.add_argument("--profile", default=None,
                        help="cluster profile (default: $HPC_MAGICS_PROFILE or this cluster's)")
    parser.add_argument("--jobs-dir", type=Path, default=None, metavar="DIR",
                        help="the jobs folder to check (default: $HPC_MAGICS_JOBS_DIR, else "
                             "hpc_jobs in the current folder, as a notebook's kernel there)")
    for flag in SBATCH_FLAGS:
        if flag.field in JOB_FLAGS:
            parser.add_argument(*flag.spellings, default=None,
                                help=f"{flag.help}, for the test job")
    parser.add_argument("--no-job", action="store_true",
                        help="submit no test job: the nodes' view of the jobs folder, their "
                             "Python and the kernel ports are not checked")
    parser.add_argument("--timeout", type=_seconds, default=120.0, metavar="S",
                        help="how long to wait for the test job (default: 120)")
    parser.add_argument("--json", action="store_true", help="the findings as JSON")
    parser.set_defaults(run=run)


def setting_from_args(args: argparse.Namespace) -> Setting:
    if args.profile:
        load_profile(args.profile)  # an unknown name is bad input: one line, exit 2
        name, reason = args.profile, "--profile"
    else:
        name, reason = detected_profile()
    request = updated(ResourceRequest(profile=name, backend="slurm"),
                      {flag.field: getattr(args, flag.dest) for flag in SBATCH_FLAGS
                       if flag.field in JOB_FLAGS})
    # a notebook's kernel here would put its jobs there
    root = args.jobs_dir.expanduser().resolve() if args.jobs_dir else jobs_root(Path.cwd())
    return Setting(request, reason, root, run_job=not args.no_job, timeout_s=args.timeout)


def run(args: argparse.Namespace) -> int:
    from . import as_json, exit_status, lines
    from . import run as run_checks

    found = run_checks(setting_from_args(args))
    print(as_json(found) if args.json else "\n".join(lines(found)))
    return exit_status(found)
