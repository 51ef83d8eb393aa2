"""The dry-run's lines saying where each value of the job script came from.

(The environment's sbatch defaults and the live/static choice: ``scheduler/cluster.py``.)
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence

from ..core import slurm_environment
from ..core.flags import SBATCH_FLAGS
from ..core.profiles import ClusterProfile
from ..core.resources import ResourceRequest


def sources_text(final: ResourceRequest, session: ResourceRequest, filled: Mapping[str, str],
                 profile: ClusterProfile, script: str,
                 environ: Mapping[str, str] | None = None, world: Sequence[str] = ()) -> str:
    """Comment lines: where each value of the script came from, and which variables reach
    sbatch (or give way to the script's own lines)."""
    env = os.environ if environ is None else environ
    lines = ["# where the values come from:"]
    for flag in SBATCH_FLAGS:
        value = getattr(final, flag.field)
        if value is None or value == ():
            continue
        if flag.field in filled:
            source = f"environment ({filled[flag.field]})"
        elif getattr(session, flag.field) == value:
            source = "%hpc_resources"
        else:
            source = "cell"
        lines.append(f"#   --{flag.name}: {source}")
    lines += [f"#   --{name}: profile {profile.name}" for name, _ in profile.extra_directives]
    if profile.balance_command:  # a command the profile's file makes run as the user
        lines.append(f"#   allocation command: {shlex.join(profile.balance_command)} (profile "
                     f"{profile.name}: {profile.source})")
    kept = [n for n in slurm_environment.kept_names(env)
            if n not in slurm_environment.overridden(env, script)]
    given_way = slurm_environment.overridden(env, script)
    if kept:
        lines.append(f"# reach sbatch from the environment: {', '.join(kept)}")
    if given_way:
        lines.append(f"# give way to the script's own lines: {', '.join(given_way)}")
    lines += [f"# the kernel's world: {item}" for item in world]
    return "\n".join(lines) + "\n"
