"""This machine's sbatch defaults, for a request about to be checked, costed and submitted.

The environment's ``SBATCH_*`` defaults (``core/slurm_environment``) fill what the cell and
``%hpc_resources`` leave open, so validation and cost see what sbatch will apply. A profile
that describes another cluster gets neither those defaults nor live checks: its request is
checked statically, and one line says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..core import slurm_environment
from ..core.profiles import ClusterProfile
from ..core.resources import ResourceRequest


def live_wanted(profile: ClusterProfile, wanted: bool | None) -> tuple[bool, str]:
    """Whether to ask the cluster here, and the one line saying why not (or "")."""
    from .cluster import cluster_name, is_foreign

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
