"""Which cluster a job script, a host or a Slurm cluster belongs to, from the profiles'
``script_hints``, ``hostnames`` and ``cluster_names``. A site's shared profile (``alliance``)
holds what its clusters share, a cluster's only its own, so the most specific match wins.
"""

from __future__ import annotations

import os
import platform
import re
from collections.abc import Mapping

from .errors import InvalidRequest
from .profiles import ClusterProfile, available_profiles, load_profile


def loadable_profiles() -> dict[str, ClusterProfile]:
    """Every profile that loads; a broken site file must not stop detection."""
    found: dict[str, ClusterProfile] = {}
    for name in available_profiles():
        try:
            found[name] = load_profile(name)
        except InvalidRequest:
            continue
    return found


def profile_for_cluster(cluster_name: str) -> str | None:
    """The profile whose ``cluster_names`` include ``cluster_name`` (Slurm's ClusterName)."""
    wanted = cluster_name.strip().lower()
    return next((name for name, profile in loadable_profiles().items() if wanted
                 and wanted in {c.lower() for c in profile.cluster_names}), None)


def profile_for_script(script: str) -> str | None:
    """The cluster a script was written for, from its spellings; None when it does not say.
    A cluster's own hints beat its site's (a script naming Fir's login host is Fir's, not
    just the Alliance's); among clusters the most hints win; clusters tied on the same
    number of hints that share a site give the site's profile, whose rules they share."""
    profiles = loadable_profiles()
    scores = {name: sum(bool(re.search(hint, script, re.IGNORECASE)) for hint in p.script_hints)
              for name, p in profiles.items()}
    matched = {name for name, score in scores.items() if score}
    # a site matched together with one of its own clusters: the cluster is the answer
    matched -= {profiles[name].extends for name in matched}
    if not matched:
        return None
    best = max(scores[name] for name in matched)
    leaders = sorted(name for name in matched if scores[name] == best)
    if len(leaders) == 1:
        return leaders[0]
    sites = {profiles[name].extends for name in leaders}
    if len(sites) == 1 and "" not in sites and sites <= profiles.keys():
        return sites.pop()
    return leaders[0]


def profile_for_host(hostname: str) -> str | None:
    """The profile whose ``hostnames`` match this host's name (a login or compute node)."""
    name = hostname.strip().lower()
    return next((profile_name for profile_name, profile in sorted(loadable_profiles().items())
                 if name and any(re.fullmatch(p, name, re.IGNORECASE) for p in profile.hostnames)),
                None)


def profile_with_partition(partition: str) -> str | None:
    """The one current system whose profile lists this partition (lncc-h100: sdumont2nd);
    None when none or several do (debug, normal): what to suggest when a script names a
    partition its profile does not have."""
    found = [name for name, p in loadable_profiles().items()
             if partition in p.partitions and not p.retired]
    return found[0] if len(found) == 1 else None


def detected_profile(environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The profile to use and why, in a few words: ``HPC_MAGICS_PROFILE``; else the profile
    of the cluster this runs on, as a server started by a hub inside a job sees it
    (``SLURM_CLUSTER_NAME``) or as a login node's name says (the profiles' ``hostnames``);
    else ``generic``."""
    env = os.environ if environ is None else environ
    chosen = env.get("HPC_MAGICS_PROFILE", "").strip()
    if chosen:
        return chosen, f"HPC_MAGICS_PROFILE={chosen}"
    cluster = env.get("SLURM_CLUSTER_NAME", "").strip()
    named = profile_for_cluster(cluster)
    if named:
        return named, f"SLURM_CLUSTER_NAME={cluster} is among its cluster_names"
    host = env.get("HOSTNAME", "") or (platform.node() if environ is None else "")
    named = profile_for_host(host)
    if named:
        return named, f"this host's name {host} matches its hostnames"
    return "generic", (f"no profile names host {host or '(unnamed)'}"
                       + (f" or cluster {cluster}" if cluster else ""))


def default_profile_name(environ: Mapping[str, str] | None = None) -> str:
    """The name :func:`detected_profile` picks."""
    return detected_profile(environ)[0]
