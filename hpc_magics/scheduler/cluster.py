"""The name of the Slurm cluster this machine submits to, asked once per process (a job is
known by cluster, id and submit time; the name keys the queue cache), and whether a profile
describes it: a profile of another cluster gets neither this machine's ``SBATCH_*``
defaults nor live checks, and one line says so.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping

from ..core import slurm_environment
from ..core.profiles import ClusterProfile
from ..core.resources import ResourceRequest
from ..core.sweep import config_value
from . import commands

UNKNOWN_CLUSTER = "default"  # no Slurm here, or it would not say


@functools.lru_cache(maxsize=1)
def config_text() -> str:
    """``scontrol show config``, asked once per process ("" when Slurm cannot be asked):
    the cluster's name, and a sweep's limits (``limits.py``)."""
    return commands.output(["scontrol", "show", "config"], timeout=20) or ""


def cluster_name() -> str:
    """``SLURM_CLUSTER_NAME`` (set inside jobs), else ``scontrol show config``'s."""
    return (os.environ.get("SLURM_CLUSTER_NAME", "").strip()
            or config_value(config_text(), "ClusterName") or UNKNOWN_CLUSTER)


def accounting_kept() -> bool | None:
    """Whether the cluster keeps accounting (sacct's records); None when Slurm cannot say."""
    storage = config_value(config_text(), "AccountingStorageType")
    return None if not storage else not storage.endswith("/none")


def is_foreign(cluster_names: tuple[str, ...]) -> bool:
    """A profile naming these clusters describes another cluster than the one here (a
    profile naming none, like ``generic``, describes whichever cluster this is)."""
    if not cluster_names or not commands.slurm_available():
        return False
    return cluster_name().lower() not in {c.lower() for c in cluster_names}


def live_wanted(profile: ClusterProfile) -> tuple[bool, str]:
    """Whether to ask the cluster here (the profile is this cluster's, or any cluster's),
    and the one line saying why not (or "")."""
    if is_foreign(profile.cluster_names):
        return False, (f"profile {profile.name} describes {', '.join(profile.cluster_names)}, "
                       f"not this cluster ({cluster_name()}): static checks only")
    return True, ""


def with_environment(request: ResourceRequest, live: bool,
                     environ: Mapping[str, str] | None = None
                     ) -> tuple[ResourceRequest, dict[str, str]]:
    """The request with this machine's sbatch defaults (what the cell and ``%hpc_resources``
    leave open, as sbatch will fill it), when the profile is this cluster's (``live``)."""
    if not live:
        return request, {}
    return slurm_environment.with_defaults(request, os.environ if environ is None else environ)
