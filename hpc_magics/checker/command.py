"""``hpc-magics check JOB.sh [--profile P] [--live|--no-live]``: a verdict per #SBATCH line.

Exit status: 0 no errors (warnings allowed), 1 problems sbatch or the site would refuse,
2 usage (no such file or profile) — so a workshop's CI can run it on its job scripts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..core.checkscript import ERROR, check_script, render
from ..core.cost import cost_line
from ..core.errors import InvalidRequest
from ..core.profiles import load_profile
from ..core.sites import default_profile_name, profile_for_script


def add_parser(subcommands: Any) -> None:
    parser = subcommands.add_parser(
        "check", help="check a job script's #SBATCH lines against a cluster profile",
        description="Read the #SBATCH block as sbatch does and check it against a profile: "
                    "a verdict per line, every problem at once. Exit 0 ok, 1 problems, 2 usage.")
    parser.add_argument("scripts", nargs="+", metavar="JOB.sh", help="job scripts ('-': stdin)")
    parser.add_argument("--profile", help="cluster profile (default: $HPC_MAGICS_PROFILE, the "
                        "cluster this runs on, else guessed from the script)")
    live = parser.add_mutually_exclusive_group()
    live.add_argument("--live", action="store_true", default=None,
                      help="also ask the cluster (scontrol, sinfo, sacctmgr, sbatch "
                           "--test-only); default: when the profile is this cluster's or any "
                           "cluster's (generic), as for a %%%%sbatch cell")
    live.add_argument("--no-live", dest="live", action="store_false",
                      help="only read the script: ask the cluster nothing")
    parser.set_defaults(run=run)


def _read(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    try:
        return Path(name).read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise InvalidRequest(f"cannot read {name}: {error.strerror}") from None


def _profile_name(chosen: str | None, script: str) -> tuple[str, str]:
    if chosen:
        return chosen, ""
    here = default_profile_name()
    if here != "generic":
        return here, ""
    guessed = profile_for_script(script)
    if not guessed:
        return "generic", ""
    successor = load_profile(guessed).successor
    if successor:  # written for a retired cluster: judged where it would run today
        return successor, (f"written for {guessed} (retired): checked against its successor "
                           f"{successor} (--profile to choose)")
    return guessed, f"profile {guessed} guessed from the script (--profile to choose)"


def run(args: argparse.Namespace) -> int:
    from ..scheduler.live import with_live

    worst = 0
    for name in args.scripts:
        script = _read(name)
        profile_name, guessed = _profile_name(args.profile, script)
        profile = load_profile(profile_name)
        report = check_script(script, profile, whole_file=True)
        report, live_text = with_live(report, script, args.live)
        print(render(report, name))
        for line in filter(None, (guessed, live_text)):
            print(line)
        print(cost_line(report.request, profile))
        if any(f.severity == ERROR for f in report.findings):
            worst = 1
    return worst
