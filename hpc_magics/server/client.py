"""From a kernel: find the Jupyter server that runs it, read its status, ask it to stop.

The kernel inherits ``SLURM_JOB_ID`` from the server's job. The server is the running
jupyter_server (``list_running_servers()``) whose process is an ancestor of the kernel.
Without one (or without the hpc_magics extension in it), the kernel falls back to its own
view of the job and, for Stop, to ``scancel`` of its own job.
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

from ..core.errors import HpcMagicsError
from ..scheduler import commands
from ..scheduler.queue import own_job, own_job_id
from ..scheduler.server_status import ServerStatus, server_status

HTTP_TIMEOUT_S = 10.0


def parent_pid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: fields start after the last ")".
    return int(stat.rsplit(")", 1)[1].split()[1])


def ancestors(pid: int) -> list[int]:
    chain = []
    current = parent_pid(pid)
    while current and current not in chain:
        chain.append(current)
        current = parent_pid(current)
    return chain


def find_own_server(servers: Iterable[Mapping[str, Any]] | None = None,
                    pid: int | None = None) -> Mapping[str, Any] | None:
    """The running server whose process is an ancestor of ``pid`` (this kernel)."""
    if servers is None:
        from jupyter_server.serverapp import list_running_servers

        servers = list_running_servers()
    lineage = set(ancestors(os.getpid() if pid is None else pid))
    return next((info for info in servers if info.get("pid") in lineage), None)


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
            with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as answer:
                data: dict[str, Any] = json.loads(answer.read().decode())
                return data
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise HpcMagicsError(f"the Jupyter server at {self.url} did not answer "
                                 f"{method} {path}: {exc}") from None


@dataclass(frozen=True)
class ServerControl:
    """How this kernel reads and stops its server: through the extension, or by itself."""

    connection: ServerConnection | None  # a server that runs this kernel and has the extension

    @classmethod
    def discover(cls) -> ServerControl:
        info = find_own_server()
        if info is None:
            return cls(None)
        connection = ServerConnection.from_info(info)
        try:
            connection.request("GET", "hpc-magics/server")
        except HpcMagicsError:  # extension not enabled there, or unreachable
            return cls(None)
        return cls(connection)

    @property
    def stop_target(self) -> str:
        if self.connection is not None:
            return "server"
        return "job" if own_job_id() is not None else "none"

    def status(self) -> ServerStatus:
        if self.connection is not None:
            try:
                return ServerStatus.from_json(self.connection.request("GET", "hpc-magics/server"))
            except HpcMagicsError:
                pass
        return server_status(own_job(), time.time())

    def jobs_from_this_server(self) -> list[tuple[str, str]]:
        """(job id, label) of the jobs this server's kernels submitted that still run."""
        if self.connection is None:
            return []
        listed = self.connection.request("GET", "hpc-magics/jobs").get("jobs", [])
        return [(str(job["job_id"]),
                 f"job {job['job_id']} “{job.get('name', '')}” ({job.get('state', '')})")
                for job in listed if job.get("from_this_server") and not job.get("final")
                and not job.get("is_server")]

    def cancel_job(self, job_id: str) -> None:
        """Cancel one of the user's jobs through the server's authenticated route."""
        if self.connection is None:
            raise HpcMagicsError("no Jupyter server with hpc_magics runs this kernel: "
                                 f"use %hpc_cancel {job_id}")
        self.connection.request("POST", f"hpc-magics/jobs/{urllib.parse.quote(job_id)}/cancel")

    def stop(self) -> str:
        """Stop the server (and its job); say in one line what was done."""
        if self.connection is not None:
            answer = self.connection.request("POST", "hpc-magics/server/stop")
            job = answer.get("job_id")
            return "The server is stopping" + (f" and cancelling job {job}." if job else ".")
        job_id = own_job_id()
        if job_id is None:
            raise HpcMagicsError("no Jupyter server runs this kernel and it is not in a Slurm "
                                 "job: stop the server from where you started it")
        result = commands.run(["scancel", job_id], timeout=30)
        if not result.ok:
            raise HpcMagicsError(f"scancel {job_id} failed: {result.first_error_line()}")
        return f"Job {job_id} is being cancelled."
