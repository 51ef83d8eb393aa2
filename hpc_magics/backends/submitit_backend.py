"""The only module that talks to submitit: Slurm and local executors."""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import submitit

from ..core.errors import InvalidRequest, SubmissionError
from ..core.jobs import normalize_state
from ..core.profiles import ClusterProfile
from ..core.resources import ResourceRequest
from ..core.units import UNLIMITED, format_memory
from ..scheduler import commands
from ..shipping.packing import Payload
from ..shipping.runner import run_cell
from .folder import JobFolder

_ENVIRONMENT_LOCK = threading.Lock()
_PARTITIONS_CACHE: dict[str, tuple[float, frozenset[str]]] = {}
_PARTITIONS_TTL_S = 300.0


@contextlib.contextmanager
def scrubbed_process_environment() -> Iterator[None]:
    """submitit runs sbatch with this process's environment: hide inherited job variables."""
    with _ENVIRONMENT_LOCK:
        saved = {k: v for k, v in os.environ.items() if k.startswith(commands.SCRUBBED_PREFIXES)}
        for key in saved:
            del os.environ[key]
        try:
            yield
        finally:
            os.environ.update(saved)


def _first_line(error: BaseException) -> str:
    text = str(error)
    output = getattr(error, "output", None) or getattr(error, "stderr", None)
    if isinstance(output, bytes):
        output = output.decode(errors="replace")
    for line in f"{output or ''}\n{text}".splitlines():
        line = line.strip()
        if line.startswith("sbatch: error:"):
            return line.removeprefix("sbatch: error:").strip()
    for line in text.splitlines():
        if "error" in line.lower() and line.strip():
            return line.strip()
    return text.splitlines()[0] if text else type(error).__name__


def _write_job_py(folder: JobFolder, payload: Payload, job_name: str) -> None:
    lines = [
        f"# hpc_magics job {job_name!r}: the %%sbatch cell, as it runs on the node.",
        "# The job rebuilds these names first (see meta.json):",
    ]
    for item in payload.manifest:
        how = f"import {item.module}" if item.how == "module" else f"{item.how}, by value"
        lines.append(f"#   {item.name}: {how}")
    if payload.replayed_cells:
        lines.append(f"#   (nothing shipped: the {payload.replayed_cells} earlier cells run first)")
    elif not payload.manifest:
        lines.append("#   (nothing: the cell uses no notebook state)")
    lines += ["#", "# job.sh is the script given to sbatch; results.pkl and output.txt come back.",
              "", payload.code.rstrip(), ""]
    (folder.path / "job.py").write_text("\n".join(lines))


class _SubmititBackend:
    name = "slurm"

    def preflight(self, request: ResourceRequest, profile: ClusterProfile) -> None:
        return None

    def log_paths(self, job_id: str, folder: JobFolder) -> Sequence[str]:
        paths = submitit.core.utils.JobPaths(folder.path, job_id=job_id, task_id=0)
        return [str(paths.stdout), str(paths.stderr)]

    def _executor(self, folder: JobFolder) -> Any:
        raise NotImplementedError

    def _parameters(self, request: ResourceRequest, profile: ClusterProfile,
                    job_name: str) -> dict[str, Any]:
        raise NotImplementedError

    def submit(self, folder: JobFolder, payload: Payload, request: ResourceRequest,
               profile: ClusterProfile, job_name: str) -> str:
        _write_job_py(folder, payload, job_name)
        executor = self._executor(folder)
        executor.update_parameters(**self._parameters(request, profile, job_name))
        # before sbatch: a squeue answer older than this cannot have seen the job
        folder.update_meta(submitted_at=time.time())
        try:
            with scrubbed_process_environment():
                job = executor.submit(run_cell, payload, str(folder.path))
        except (subprocess.CalledProcessError, submitit.core.utils.FailedJobError) as error:
            raise SubmissionError(f"the scheduler refused the job: {_first_line(error)}") from None
        except FileNotFoundError as error:
            raise SubmissionError(f"could not submit: {error}") from None
        self._after_submit(job, folder)
        return str(job.job_id)

    def _after_submit(self, job: Any, folder: JobFolder) -> None:
        submission = Path(job.paths.submission_file)
        if submission.exists():
            shutil.copyfile(submission, folder.path / "job.sh")


class SlurmBackend(_SubmititBackend):
    name = "slurm"

    def __init__(self, python: str | None = None) -> None:
        self.python = python or os.environ.get("HPC_MAGICS_PYTHON") or sys.executable

    def preflight(self, request: ResourceRequest, profile: ClusterProfile) -> None:
        """Check the partition against the live cluster (one cached ``sinfo``)."""
        if not request.partition:
            return
        partitions = self._partitions()
        if partitions and request.partition not in partitions:
            raise InvalidRequest(f"partition {request.partition!r} does not exist on this cluster:"
                                 f" use one of {', '.join(sorted(partitions))}")

    @staticmethod
    def _partitions() -> frozenset[str]:
        cached = _PARTITIONS_CACHE.get("sinfo")
        if cached and time.monotonic() - cached[0] < _PARTITIONS_TTL_S:
            return cached[1]
        try:
            result = commands.run(["sinfo", "-h", "-o", "%R"], timeout=20)
        except SubmissionError:
            return frozenset()
        names = frozenset(line.strip() for line in result.stdout.splitlines() if line.strip())
        if result.ok:
            _PARTITIONS_CACHE["sinfo"] = (time.monotonic(), names)
        return names if result.ok else frozenset()

    def _executor(self, folder: JobFolder) -> Any:
        return submitit.SlurmExecutor(folder=folder.path, max_num_timeout=0, python=self.python)

    def _parameters(self, request: ResourceRequest, profile: ClusterProfile,
                    job_name: str) -> dict[str, Any]:
        params: dict[str, Any] = {"job_name": job_name, "signal_delay_s": 0,
                                  "time": None, "stderr_to_stdout": False}
        if request.time_s is not None and request.time_s != UNLIMITED:
            params["time"] = max(1, math.ceil(request.time_s / 60))
        if request.partition:
            params["partition"] = request.partition
        if request.nodes:
            params["nodes"] = request.nodes
        if request.ntasks_per_node:
            params["ntasks_per_node"] = request.ntasks_per_node
        if request.cpus_per_task:
            params["cpus_per_task"] = request.cpus_per_task
        if request.mem_mb is not None:
            params["mem"] = format_memory(request.mem_mb) if request.mem_mb else "0"
        additional: dict[str, Any] = {}
        if request.gpus_per_node is not None:
            if profile.gpu_flag == "gres":
                gres = f"gpu:{request.gpus_per_node}"
                params["gres"] = f"{request.gres},{gres}" if request.gres else gres
            else:
                additional["gpus-per-node"] = str(request.gpus_per_node)
        if request.gres and "gres" not in params:
            params["gres"] = request.gres
        if request.account:
            params["account"] = request.account
        if request.qos:
            params["qos"] = request.qos
        if request.constraint:
            params["constraint"] = request.constraint
        # umask: the job's files stay private to the user, like its folder
        params["setup"] = ["umask 077", *profile.setup, *request.setup]
        for flag, value in list(profile.extra_directives) + list(request.extra):
            additional[flag] = value if value else True
        if additional:
            params["additional_parameters"] = additional
        if request.nodes is None and request.ntasks_per_node is None:
            params["ntasks_per_node"] = 1
        return params

    def states(self, folder_by_id: dict[str, JobFolder],
               max_age_s: float | None = None) -> dict[str, str]:
        """The watcher's states (it alone decides them: scheduler/watcher.py)."""
        from ..scheduler.watcher import watcher

        polled = watcher().poll(folder_by_id.values(), max_age_s=max_age_s)
        return {job_id: polled[folder.path].state for job_id, folder in folder_by_id.items()}

    def cancel(self, job_id: str, folder: JobFolder) -> None:
        from ..core.jobids import require_job_id
        from ..scheduler.watcher import watcher

        job_id = str(require_job_id(job_id))  # 123, 123_4, 123_[1-5], 123+0
        result = commands.run(["scancel", job_id], timeout=30)
        if not result.ok:
            raise SubmissionError(f"scancel {job_id} failed: {result.first_error_line()}")
        watcher().queue.invalidate()  # the next look at the queue should see the cancel


class LocalBackend(_SubmititBackend):
    """submitit's local executor: the same cells on this machine, no scheduler."""

    name = "local"
    _jobs: dict[str, Any] = {}

    def _executor(self, folder: JobFolder) -> Any:
        return submitit.LocalExecutor(folder=folder.path, max_num_timeout=0)

    def _parameters(self, request: ResourceRequest, profile: ClusterProfile,
                    job_name: str) -> dict[str, Any]:
        timeout_min = 60 * 24 * 365
        if request.time_s is not None and request.time_s != UNLIMITED:
            timeout_min = max(1, math.ceil(request.time_s / 60))
        return {"timeout_min": timeout_min, "name": job_name, "signal_delay_s": 0}

    def _after_submit(self, job: Any, folder: JobFolder) -> None:
        LocalBackend._jobs[str(job.job_id)] = job
        script = ["#!/bin/bash",
                  "# Ran on this machine through submitit's local executor (no Slurm here).",
                  f"# Rerun by hand: {sys.executable} -m submitit.core._submit {folder.path}",
                  ""]
        (folder.path / "job.sh").write_text("\n".join(script))

    def states(self, folder_by_id: dict[str, JobFolder],
               max_age_s: float | None = None) -> dict[str, str]:
        states: dict[str, str] = {}
        for job_id, folder in folder_by_id.items():
            job = LocalBackend._jobs.get(job_id)
            if job is not None:
                states[job_id] = normalize_state(job.state)
            elif folder.has_results():
                states[job_id] = "FINISHED"
            elif _pid_alive(job_id):
                states[job_id] = "RUNNING"
            else:
                states[job_id] = "UNKNOWN"
        return states

    def cancel(self, job_id: str, folder: JobFolder) -> None:
        job = LocalBackend._jobs.get(job_id)
        if job is not None:
            job.cancel(check=False)
        elif _pid_alive(job_id):
            os.kill(int(job_id), 15)


def _pid_alive(job_id: str) -> bool:
    try:
        status = Path(f"/proc/{int(job_id)}/stat").read_text()
    except (OSError, ValueError):
        return False
    return status.rsplit(") ", 1)[-1][:1] not in {"Z", "X"}
