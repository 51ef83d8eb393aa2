"""From a kernel: find the Jupyter server that runs it, read its status, ask it to stop.

The kernel inherits ``SLURM_JOB_ID`` from the server's job. The server is the running
jupyter_server (its runtime file) whose process is an ancestor of the kernel.
Without one (or without the hpc_magics extension in it), the kernel falls back to its own
view of the job. Stop only ever ends what it names: the server (and its job) through the
extension; in a Slurm kernel, that kernel's own job, or only its step in an
allocation of the user's (``--jobid``), never the allocation; without the extension, the
job of the server that runs this kernel; else nothing.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from ..core.errors import HpcMagicsError
from ..node.kernel import KERNEL_TARGET_ENV
from ..scheduler import processes
from ..scheduler.own_job import own_job, own_job_id
from ..scheduler.server_status import ServerStatus, server_status
from ..widgets.server_view import STOP_JOB, STOP_KERNEL, STOP_NOTHING, STOP_SERVER, STOP_STEP

HTTP_TIMEOUT_S = 10.0


# The server runs beside the kernel: its token never goes through a proxy (http_proxy and
# friends are for the world outside), so this client's opener has no proxy handler.
_LOCAL_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def running_servers() -> list[dict[str, Any]]:
    """The running Jupyter servers of this user, from their runtime files (what
    jupyter_server's ``list_running_servers`` reads; a kernel need not install it)."""
    from jupyter_core.paths import jupyter_runtime_dir

    servers = []
    for path in sorted(Path(jupyter_runtime_dir()).glob("jpserver-*.json")):
        try:
            info, written = json.loads(path.read_text()), path.stat().st_mtime
        except (OSError, ValueError):
            continue
        # a server that ended without removing its file: its pid may name another process
        if isinstance(info, dict) and processes.started_by(info.get("pid"), written):
            servers.append(info)
    return servers


def find_own_server(servers: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The running server whose process is an ancestor of this kernel."""
    try:
        lineage = {parent.pid for parent in psutil.Process().parents()}
    except psutil.Error:  # gone already
        return None
    return next((info for info in servers if info.get("pid") in lineage), None)


def slurm_kernel_target(environ: Mapping[str, str] | None = None) -> str | None:
    """In a Slurm kernel: what ends it and nothing else (its job, or ``JOB.STEP``
    in the user's allocation), as its node side put it in the environment; None elsewhere.
    A job or step the kernel starts inherits the variable: it counts only where it names
    this process's own job (and step)."""
    env = os.environ if environ is None else environ
    job, _, step = env.get(KERNEL_TARGET_ENV, "").partition(".")
    if not job or job != own_job_id(env):
        return None
    if step and step != env.get("SLURM_STEP_ID", "").strip():
        return None
    return f"{job}.{step}" if step else job


@dataclass(frozen=True)
class ServerConnection:
    url: str  # the server's URL, ending in "/" (includes base_url)
    token: str

    @classmethod
    def from_info(cls, info: Mapping[str, Any]) -> ServerConnection:
        url = str(info["url"])
        return cls(url if url.endswith("/") else url + "/", str(info.get("token") or ""))

    def request(self, method: str, path: str) -> dict[str, Any]:
        request = urllib.request.Request(
            self.url + path, method=method, data=b"{}" if method == "POST" else None,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with _LOCAL_OPENER.open(request, timeout=HTTP_TIMEOUT_S) as answer:
                return json.loads(answer.read().decode())
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise HpcMagicsError(f"the Jupyter server at {self.url} did not answer "
                                 f"{method} {path}: {exc}") from None


@dataclass(frozen=True)
class ServerControl:
    """How this kernel reads and stops its server: through the extension, or by itself."""

    connection: ServerConnection | None  # a server that runs this kernel and has the extension
    kernel_target: str | None = None  # a Slurm kernel's job, or its step
    under_server: bool = False  # a server without the extension runs this kernel (its job)

    @classmethod
    def discover(cls) -> ServerControl:
        info = find_own_server(running_servers())
        if info is not None:
            connection = ServerConnection.from_info(info)
            try:
                connection.request("GET", "hpc-magics/server")
                return cls(connection)
            except HpcMagicsError:  # extension not enabled there, or unreachable
                pass
        return cls(None, slurm_kernel_target(), under_server=info is not None)

    @property
    def stop_target(self) -> str:
        if self.connection is not None:
            return STOP_SERVER
        if self.kernel_target is not None:
            return STOP_STEP if "." in self.kernel_target else STOP_KERNEL
        return STOP_JOB if self.under_server and own_job_id() is not None else STOP_NOTHING

    def status(self) -> ServerStatus:
        if self.connection is not None:
            try:
                return ServerStatus.from_json(self.connection.request("GET", "hpc-magics/server"))
            except HpcMagicsError:
                pass
        return server_status(own_job(), time.time())

    def jobs_from_this_server(self) -> list[tuple[str, str]]:
        """(job id, label) of the jobs this server's kernels submitted that still run; not
        the Slurm kernels' own jobs: those end with the server whatever is ticked."""
        if self.connection is None:
            return []
        listed = self.connection.request("GET", "hpc-magics/jobs").get("jobs", [])
        return [(str(job["job_id"]),
                 f"job {job['job_id']} “{job.get('name', '')}” ({job.get('state', '')})")
                for job in listed if job.get("from_this_server") and not job.get("final")
                and not job.get("is_server") and job.get("kind") != "kernel"]

    def cancel_job(self, job_id: str) -> None:
        """Cancel one of the user's jobs through the server's authenticated route."""
        if self.connection is None:
            raise HpcMagicsError("no Jupyter server with hpc_magics runs this kernel: "
                                 f"use %hpc_cancel {job_id}")
        self.connection.request("POST", f"hpc-magics/jobs/{urllib.parse.quote(job_id)}/cancel")

    def stop(self) -> str:
        """Stop what ``stop_target`` names, nothing more; say in one line what was done."""
        target = self.stop_target
        if target == STOP_SERVER:
            assert self.connection is not None
            answer = self.connection.request("POST", "hpc-magics/server/stop")
            job = answer.get("job_id")
            return "The server is stopping" + (f" and cancelling job {job}." if job else ".")
        if target == STOP_NOTHING:
            raise HpcMagicsError("no Jupyter server runs this kernel and it is not a Slurm "
                                 "kernel: stop the server from where you started it")
        from ..kernel.orphans import scancel

        cancel = self.kernel_target or own_job_id()
        assert cancel is not None
        # the answer may never be seen: the kernel saying it ends with what it cancels
        failed = scancel(cancel)
        if failed:
            raise HpcMagicsError(f"scancel {cancel} failed: {failed}")
        return {STOP_STEP: f"This kernel's step {cancel} is being cancelled; your allocation "
                           f"{cancel.split('.')[0]} keeps running.",
                STOP_KERNEL: f"This kernel's job {cancel} is being cancelled (nothing else is).",
                STOP_JOB: f"Job {cancel}, which runs this Jupyter server, is being cancelled."
                }[target]
