"""The only module that talks to submitit: Slurm and local executors."""

from __future__ import annotations

import math
import os
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import submitit
from submitit.slurm.slurm import SlurmJobEnvironment

from ..core import kernel_world, login_paths, notebook_world, validation
from ..core.errors import InvalidRequest, SubmissionError, refuse
from ..core.jobscript import cell_parts, directives, log_name, render
from ..core.kernel_world import refusals
from ..core.profiles import ClusterProfile
from ..core.resources import ResourceRequest
from ..core.scale import ScaleOptions, scaled_parts, signal_directive
from ..core.units import UNLIMITED
from ..jobfolder.folder import JobFolder
from ..node.runner import run_cell
from ..scheduler import local_jobs
from ..scheduler import submit as submission
from ..scheduler.live import partitions as live_partitions
from ..shipping.buffers import write_buffers
from ..shipping.packing import Payload

JOB_SCRIPT = "job.sh"


def _write_job_py(folder: JobFolder, payload: Payload, job_name: str, head: str = "") -> None:
    lines = [
        *head.splitlines(),
        f"# hpc_magics job {job_name!r}: the %%sbatch cell, as it runs on the node.",
        "# The job rebuilds these names first (see meta.json):",
    ]
    for item in payload.manifest:
        how = f"import {item.module}" if item.how == "module" else f"{item.how}, by value"
        lines.append(f"#   {item.name}: {how}")
    if not payload.manifest:
        lines.append("#   (nothing: the cell uses no notebook state)")
    lines += ["#", "# job.sh is the script given to sbatch; results.pkl and output.txt come back.",
              "", payload.code.rstrip(), ""]
    (folder.path / "job.py").write_text("\n".join(lines))


class ScriptedSlurmExecutor(submitit.SlurmExecutor):
    """submitit's Slurm engine (pickled call, job environment, checkpointing) running our
    script through the submission door. ``array=True``: the script has an ``--array``
    line, and each call of one batch is one task of that array (pickled as ``%A_%a``)."""

    def __init__(self, folder: Path, script: str, num_tasks: int, *, array: bool = False,
                 script_name: str = JOB_SCRIPT) -> None:
        super().__init__(folder=folder, max_num_timeout=0)
        self.script = script
        self.task_count = num_tasks
        self.array = array
        self.script_name = script_name
        self.submitted: submission.Submitted | None = None  # sbatch's answer, once asked

    def _num_tasks(self) -> int:
        return self.task_count

    def _internal_process_submissions(self, delayed_submissions: list[Any]) -> list[Any]:
        if self.array:
            return self._submit_array(delayed_submissions)
        if len(delayed_submissions) != 1:  # submitit would render its own array script
            raise SubmissionError("several calls need an array script: submit them as a sweep")
        return list(super()._internal_process_submissions(delayed_submissions))

    def _submit_array(self, delayed_submissions: list[Any]) -> list[Any]:
        """submitit's own array protocol (``SlurmExecutor._internal_process_submissions``),
        with our script and sbatch call instead of a second executor's."""
        folder = submitit.core.utils.JobPaths.get_first_id_independent_folder(self.folder)
        pickles = []
        for index, delayed in enumerate(delayed_submissions):
            path = folder / f".array-{index}.pkl"
            delayed.set_timeout(5, self.max_num_timeout)
            delayed.dump(path)
            pickles.append(path)
        first = self._submit_command(self._submitit_command_str)
        tasks = list(range(self._num_tasks()))
        jobs: list[Any] = [submitit.SlurmJob(folder=self.folder, job_id=f"{first.job_id}_{task}",
                                  tasks=tasks) for task in range(len(delayed_submissions))]
        for job, path in zip(jobs, pickles, strict=True):
            job.paths.move_temporary_file(path, "submitted_pickle")
        return jobs

    def _submit_command(self, command: str) -> Any:
        # the preflight refused another cluster before the folder was made
        self.submitted = submission.submit(self.script, Path(self.folder) / self.script_name,
                                           cluster_checked=True)
        return self.job_class(folder=self.folder, job_id=self.submitted.job_id,
                              tasks=list(range(self._num_tasks())))


class Backend:
    """Where jobs run: submit and cancel (states are the watcher's, ``scheduler/watcher.py``)."""

    name = "slurm"

    def preflight(self, request: ResourceRequest, profile: ClusterProfile, *,
                  live: bool = True, submitting: bool = True) -> None:
        """Raise InvalidRequest for what the live scheduler would refuse (``live`` False:
        the profile is another cluster's: ask the scheduler nothing;
        ``submitting`` False: a dry run, which shows the script whether Slurm answers or not)."""

    def log_paths(self, job_id: str, folder: JobFolder, task: int = 0) -> Sequence[str]:
        """Task ``task``'s stdout/stderr files, in that order."""
        where = folder.path.expanduser().absolute()
        return [str(where / log_name(job_id, task, kind)) for kind in ("out", "err")]

    def job_script(self, folder: str, request: ResourceRequest, profile: ClusterProfile,
                   job_name: str, options: ScaleOptions | None = None) -> str:
        """The exact ``job.sh`` a job in ``folder`` gets; pure, so a dry run can show it."""
        raise NotImplementedError

    def cancel(self, job_id: str, folder: JobFolder) -> None:
        """Cancel one job (Slurm: also an array task ``123_4``, a range, a het ``123+0``)."""
        raise NotImplementedError

    def _executor(self, folder: JobFolder, script: str, request: ResourceRequest) -> Any:
        raise NotImplementedError

    def submit(self, folder: JobFolder, payload: Payload, request: ResourceRequest,
               profile: ClusterProfile, job_name: str,
               options: ScaleOptions | None = None) -> str:
        """Submit and return the job id; ``folder/job.sh`` is then what was submitted.
        ``options``: several tasks, checkpoints, staging (``core/scale.py``)."""
        script = self.job_script(str(folder.path.absolute()), request, profile, job_name,
                                 options)
        _write_job_py(folder, payload, job_name)
        payload = write_buffers(payload, folder.path)  # big arrays: raw files, not pickled
        executor = self._executor(folder, script, request)
        from ..scheduler.job_status import record_submission

        started = time.time()  # before sbatch: a squeue answer older cannot have seen the job
        try:
            # the options travel only when given: a plain cell's call stays as it was
            extra = (options,) if options is not None and options.active else ()
            job = executor.submit(run_cell, payload, str(folder.path), *extra)
        except FileNotFoundError as error:
            raise SubmissionError(f"could not submit: {error}") from None
        try:
            self._after_submit(job, folder, script)
            answer = getattr(executor, "submitted", None)  # sbatch's (Slurm only)
            record_submission(folder, str(job.job_id), started,
                              answer.cluster if answer is not None else None)
        except OSError as error:  # a full file system after sbatch: say the job exists
            raise SubmissionError(
                f"job {job.job_id} was submitted, but its folder {folder.path} cannot be "
                f"written ({error.strerror}): free some space, or scancel {job.job_id}"
            ) from None
        return str(job.job_id)

    def _after_submit(self, job: Any, folder: JobFolder, script: str) -> None:
        return None


class SlurmBackend(Backend):
    def __init__(self, python: str | None = None) -> None:
        self.given_python = python or os.environ.get("HPC_MAGICS_PYTHON") or None
        self.python = self.given_python or sys.executable
        # a whole-notebook job: the world is that of the kernel the notebook names
        self.notebook_kernel: notebook_world.NotebookKernel | None = None

    def kernel_world(self, request: ResourceRequest, profile: ClusterProfile
                     ) -> kernel_world.WorldParts:
        """The kernel's interpreter, modules, uenv and image, as the job script's lines."""
        settings = dict(profile.environment)
        exports = [v for f, v in (*profile.extra_directives, *request.extra) if f == "export"]
        clean = kernel_world.starts_clean(os.environ, exports)
        here = kernel_world.read(os.environ, self.python)
        if self.notebook_kernel is not None:
            return notebook_world.notebook_parts(self.notebook_kernel, here, settings, clean,
                                                 driver=self.python)
        if self.given_python:
            settings["interpreter"] = self.given_python
        return kernel_world.parts(here, settings, clean=clean)

    def preflight(self, request: ResourceRequest, profile: ClusterProfile, *,
                  live: bool = True, submitting: bool = True) -> None:
        """Refuse a submission at once for another cluster (``-M``), or while the controller
        is known to be away; check the partition against the live cluster unless ``live``
        is False."""
        settings = dict(profile.environment)
        shared_tmp = login_paths.nodes_share_tmp(os.environ)
        kernel = self.notebook_kernel
        if kernel is not None:  # the notebook's kernel, and the Python that starts it
            refuse(refusals(kernel.world, {**settings, **kernel.settings}, shared_tmp))
            refuse(refusals(kernel_world.KernelWorld(self.python), {}, shared_tmp))
        else:
            if self.given_python:
                settings["interpreter"] = self.given_python
            refuse(refusals(kernel_world.read(os.environ, self.python), settings, shared_tmp))
        if submitting or live:  # the cell's, the profile's and the environment's -M
            validation.refuse(submission.other_cluster(directives(request, profile)))
        if submitting:
            self._refuse_while_away()
        if not request.partition or not live:
            return
        partitions = live_partitions()  # asked once a session
        if partitions and request.partition not in partitions:
            raise InvalidRequest(f"partition {request.partition!r} does not exist on this cluster:"
                                 f" use one of {', '.join(sorted(partitions))}")

    @staticmethod
    def _refuse_while_away() -> None:
        """sbatch retries an absent controller for MessageTimeout seconds (often a minute)
        with the kernel blocked. When squeue last failed, look once more (the watcher waits
        half a second) and refuse at once if the controller is still silent."""
        from ..scheduler.queue import SCHEDULER_SILENT
        from ..scheduler.watcher import watcher

        queue = watcher().queue
        if queue.last_error() is None:  # asks nobody: the usual submission stays quick
            return
        now = queue.look_now()  # past the back-off: a submission is the user's own ask
        if now.error is not None:
            why = ("squeue gave no answer in time" if now.error == SCHEDULER_SILENT
                   else now.error)
            raise SubmissionError(f"Slurm's controller does not answer ({why}): nothing was "
                                  "submitted; run the cell again when it is back")

    def job_script(self, folder: str, request: ResourceRequest, profile: ClusterProfile,
                   job_name: str, options: ScaleOptions | None = None,
                   array: str | None = None) -> str:
        """``array``: sbatch's ``--array`` range, for one array of a sweep."""
        world = self.kernel_world(request, profile)
        python = world.python
        taken = {flag for flag, _ in (*request.extra, *profile.extra_directives)}
        request = request.changed(extra=(*request.extra, *(
            pair for pair in world.directives if pair[0] not in taken)))
        # USR2 at the limit itself unless the cell checkpoints (core/scale.py says when):
        # an earlier signal would end a plain cell as failed instead of as TIMEOUT
        signal = signal_directive(options).replace("USR2", SlurmJobEnvironment.USR_SIG)
        # a cell run again after a node failure could repeat what it did: only when asked
        # (or when it checkpoints: then the engine adds --requeue itself)
        asked = {flag for flag, _ in (*request.extra, *profile.extra_directives)}
        checkpoints = options is not None and bool(options.checkpoint)
        if not asked & {"requeue", "no-requeue"} and not checkpoints:
            request = request.changed(extra=(*request.extra, ("no-requeue", "")))
        parts = cell_parts(folder, python, job_name, signal=signal, array=array)
        if options is not None and options.active:
            parts = scaled_parts(parts, options, python)
        parts = replace(parts, prologue=(*parts.prologue, *world.lines))
        return render(request, profile, parts)

    def _executor(self, folder: JobFolder, script: str, request: ResourceRequest) -> Any:
        tasks = (request.nodes or 1) * (request.ntasks_per_node or 1)
        return ScriptedSlurmExecutor(folder.path, script, tasks)

    def cancel(self, job_id: str, folder: JobFolder) -> None:
        from ..scheduler.watcher import watcher

        watcher().cancel(job_id, listed=False)  # the folder proves the job ours


class LocalBackend(Backend):
    """submitit's local executor: the same cells on this machine, no scheduler."""

    name = "local"

    def job_script(self, folder: str, request: ResourceRequest, profile: ClusterProfile,
                   job_name: str, options: ScaleOptions | None = None) -> str:
        from .local_process import CONTROLLER

        controller = shlex.join([sys.executable, "-m", CONTROLLER, folder])
        task = shlex.join([sys.executable, "-u", "-m", "submitit.core._submit", folder])
        # present tense: the same text is a dry run's preview and the job's job.sh, for a
        # cell or a whole notebook
        limit = (f"the executor stops the job after {_timeout_min(request)} min (TIMEOUT)"
                 if _has_time_limit(request) else "no time limit (-t sets one)")
        return "\n".join([
            "#!/bin/bash",
            "# Runs on this machine through submitit's local executor (no Slurm here): no",
            f"# #SBATCH line applies; {limit}.",
            "# The executor starts its controller, with SUBMITIT_EXECUTOR=local and its",
            "# SUBMITIT_LOCAL_* variables:",
            f"#   {controller}",
            "# which runs the job as:",
            f"#   {task}",
            ""])

    def _executor(self, folder: JobFolder, script: str, request: ResourceRequest) -> Any:
        from .local_process import LocalProcessExecutor

        executor = LocalProcessExecutor(folder=folder.path, max_num_timeout=0)
        executor.update_parameters(timeout_min=_timeout_min(request), signal_delay_s=0)
        return executor

    def _after_submit(self, job: Any, folder: JobFolder, script: str) -> None:
        local_jobs.note_started(str(job.job_id), job)
        (folder.path / JOB_SCRIPT).write_text(script)

    def cancel(self, job_id: str, folder: JobFolder) -> None:
        local_jobs.cancel(job_id, folder)


def _has_time_limit(request: ResourceRequest) -> bool:
    return request.time_s is not None and request.time_s != UNLIMITED


def _timeout_min(request: ResourceRequest) -> int:
    """The local executor's limit: the request's, else a year (it needs one)."""
    if request.time_s is not None and _has_time_limit(request):
        return max(1, math.ceil(request.time_s / 60))
    return 60 * 24 * 365
