"""What of the kernel's world ``%%sbatch`` uses, and the dry-run's lines saying where from.

The environment's Slurm defaults (``SBATCH_ACCOUNT``, ...: ``core/slurm_environment``) fill
what the cell and ``%hpc_resources`` leave open, so validation and cost see what sbatch will
apply. A profile that describes another cluster gets neither those defaults nor live checks:
its request is checked statically and the dry-run says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from ..core import slurm_environment
from ..core.flags import SBATCH_FLAGS
from ..core.profiles import ClusterProfile
from ..core.resources import ResourceRequest


def live_wanted(profile: ClusterProfile, wanted: bool | None) -> tuple[bool, str]:
    """Whether to ask the cluster here, and the one line saying why not (or "")."""
    from ..scheduler.cluster import cluster_name, is_foreign

    if wanted is False:
        return False, "--no-live: static checks only, nothing asked of the cluster"
    if wanted is None and is_foreign(profile.cluster_names):
        return False, (f"profile {profile.name} describes {', '.join(profile.cluster_names)}, "
                       f"not this cluster ({cluster_name()}): static checks only "
                       "(--live asks this cluster anyway)")
    return True, ""


def with_environment(request: ResourceRequest, live: bool,
                     environ: Mapping[str, str] | None = None
                     ) -> tuple[ResourceRequest, dict[str, str]]:
    """The request with this machine's sbatch defaults, when the profile is this cluster's."""
    if not live:
        return request, {}
    return slurm_environment.with_defaults(request, os.environ if environ is None else environ)


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
    kept = [n for n in slurm_environment.kept_names(env)
            if n not in slurm_environment.overridden(env, script)]
    given_way = slurm_environment.overridden(env, script)
    if kept:
        lines.append(f"# reach sbatch from the environment: {', '.join(kept)}")
    if given_way:
        lines.append(f"# give way to the script's own lines: {', '.join(given_way)}")
    lines += [f"# the kernel's world: {item}" for item in world]
    return "\n".join(lines) + "\n"
