"""What a Slurm kernel asks for, as the kernelspec's provisioner config (plain JSON) keeps
it. The request is checked by the functions ``%%sbatch`` uses: a kernel refuses what a cell
would.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core import validation
from ..core.errors import InvalidRequest
from ..core.jobids import require_job_id
from ..core.jobscript import directives
from ..core.profiles import ClusterProfile, load_profile
from ..core.resources import ResourceRequest, from_dict, to_dict
from ..core.units import format_duration

PROVISIONER_NAME = "hpc-magics-slurm"


@dataclass(frozen=True)
class KernelRequest:
    """One Slurm kernel's settings: a new job for ``request``, or a step of ``jobid``."""

    request: ResourceRequest
    python: str  # the interpreter that runs hpc_magics.node.kernel on the node
    jobid: str | None = None
    tunnel: str | None = None  # "tcp" | "ssh"; None: the profile's ([kernel] tunnel)

    def to_config(self) -> dict[str, Any]:
        config = {"request": to_dict(self.request), "python": self.python,
                  "jobid": self.jobid}
        return {**config, "tunnel": self.tunnel} if self.tunnel else config

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> KernelRequest:
        try:
            request = from_dict(config["request"])
            python = str(config["python"])
        except (KeyError, TypeError, ValueError) as error:
            raise InvalidRequest(f"the kernelspec's provisioner config is damaged ({error}): "
                                 "install the kernel again with hpc-magics kernel install"
                                 ) from None
        jobid = config.get("jobid")
        tunnel = config.get("tunnel")
        return cls(request, python, str(require_job_id(str(jobid))) if jobid else None,
                   str(tunnel) if tunnel else None)

    def connection_route(self) -> str:
        """How the login host reaches the kernel: ``tcp`` or ``ssh`` (checked: one line)."""
        from .tunnel import choose, ssh_options

        profile = self.profile()
        route = choose(self.tunnel, profile)
        if route == "ssh":
            ssh_options(profile)  # a wrong value says so now, not after the queue wait
        return route

    def profile(self) -> ClusterProfile:
        return load_profile(self.request.profile)

    def check(self) -> list[validation.Problem]:
        """Every problem of the request (the warnings too); raises on the first error line.
        Asks Slurm this cluster's name (a job for another is refused). A step of an
        existing allocation asks for nothing new: nothing to check."""
        from ..scheduler.submit import other_cluster

        self.connection_route()
        if self.jobid:
            return []
        profile = self.profile()
        problems = [*other_cluster(directives(self.request, profile)),  # -M, SBATCH_CLUSTERS
                    *validation.check(self.request.changed(backend="slurm"), profile)]
        validation.refuse(problems)
        return problems


def request_summary(request: ResourceRequest, profile: ClusterProfile) -> str:
    """``debug, 1 GPU, 1h`` — partition, GPUs, time, as a launcher tile can show them."""
    parts = [request.partition or profile.default_partition or "default partition"]
    if request.nodes and request.nodes > 1:
        parts.append(f"{request.nodes} nodes")
    gpus = request.gpus()
    if gpus is not None:
        kind = f" {gpus.type}" if gpus.type else ""
        parts.append(f"{gpus.count}{kind} GPU{'s' if gpus.count != 1 else ''}")
    if request.cpus_per_task:
        parts.append(f"{request.cpus_per_task} CPUs")
    if request.time_s:
        parts.append(format_duration(request.time_s).replace("h00m", "h"))
    return ", ".join(parts)


def display_name(wrapped: str, kernel: KernelRequest) -> str:
    """``Python 3 (Slurm: debug, 1 GPU, 1h)``, or ``… (Slurm job 123)`` for a step; the
    wrapped kernel's own note goes ("Python 3 (ipykernel)"): one pair of brackets."""
    wrapped = re.sub(r"\s*\([^()]*\)$", "", wrapped.strip()) or wrapped
    if kernel.jobid:
        return f"{wrapped} (Slurm job {kernel.jobid})"
    return f"{wrapped} (Slurm: {request_summary(kernel.request, kernel.profile())})"
