"""The ``jupyter_client`` kernel provisioner: the kernel runs as a Slurm job (or a step of
the user's allocation). While it waits, Slurm's pending reason goes to the server's log and
to meta.json (the status bar reads it); ``poll`` reads the user's shared, cached squeue
view, never one squeue per call; shutting down cancels the job (only the step, in an
allocation). With ``--tunnel ssh`` the client reaches the kernel through ``tunnel.py``.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar, cast

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning.provisioner_base import KernelProvisionerBase
from tornado.web import HTTPError
from traitlets import Dict, Float, Unicode

from ..core.errors import HpcMagicsError, InvalidRequest, SubmissionError
from ..core.jobs import JobSnapshot, plain_reason
from ..jobfolder.folder import JobFolder
from ..node.kernel import CURVE, scancel_target
from ..scheduler.job_status import record_submission
from ..scheduler.queue import ANSWER_WITHIN_S, JobQueue
from . import launch
from .orphans import owner, scancel
from .spec import KernelRequest
from .tunnel import SshTunnel, for_kernel

T = TypeVar("T")
FILE_CHECK_S = 0.5  # the node's files are on the local view of the shared home: cheap
CANCEL_GONE_WITHIN_S = 15.0
TUNNEL_RETRY_S = 30.0  # a tunnel that died (the node's sshd restarted) is reopened this often


class RefusedRequest(HTTPError, InvalidRequest):
    """A request the cluster would refuse. An HTTPError too: the Jupyter server shows an
    HTTPError's message to the browser (any other exception is an "Unhandled error")."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(status, message, reason="Bad Request"
                         if status == 400 else "Kernel not started")
        self.message = message

    def __str__(self) -> str:
        return self.message


class StartFailed(RefusedRequest, SubmissionError):
    """The job was refused or ended before its kernel started."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 500)


async def _off_loop(function: Callable[..., T], *arguments: Any) -> T:
    """``function`` in a thread; in place when the exiting interpreter refuses threads (an
    exit hook still cancels its job)."""
    try:
        return await asyncio.to_thread(function, *arguments)
    except RuntimeError as error:
        if "shutdown" not in str(error):
            raise
        return function(*arguments)


def takes_curve(metadata: Any) -> bool:
    """The kernelspec's kernel takes CurveZMQ keys (``supported_encryption``): it gets a
    pair whatever the server's ``transport_encryption``, because a Slurm kernel listens
    where other users reach it and its IOPub broadcasts to whoever connects."""
    import zmq

    declared = (metadata or {}).get("supported_encryption") or ()
    declared = [declared] if isinstance(declared, str) else declared
    return CURVE in {str(item).strip().lower() for item in declared} and zmq.has(CURVE)


class SlurmProvisioner(KernelProvisionerBase):
    """Starts the kernelspec's kernel on a compute node, as a job or a step."""

    request = Dict(help="the resource request, as core.resources.to_dict writes it")
    python = Unicode(help="the Python that runs hpc_magics.node.kernel on the node")
    jobid = Unicode(None, allow_none=True, help="an allocation to start the kernel in")
    tunnel = Unicode(None, allow_none=True,
                     help="tcp or ssh: how this host reaches the kernel (None: the profile's)")
    start_timeout = Float(0.0, config=True,
                          help="give up a pending job after this many seconds (0: never)")

    job_id: str | None = None
    step_id: str = ""
    folder: JobFolder | None = None
    _srun: subprocess.Popen[bytes] | None = None
    _submitted_at: float = 0.0
    _ended: int | None = None
    _tunnel: SshTunnel | None = None
    _tunnel_tried: float = 0.0

    def _kernel(self) -> KernelRequest:
        return KernelRequest.from_config({"request": self.request, "python": self.python,
                                          "jobid": self.jobid, "tunnel": self.tunnel})

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        try:
            kernel = self._kernel()
            # every error in one line; off the loop: it may ask scontrol this cluster's name
            problems = await _off_loop(kernel.check)
        except InvalidRequest as error:
            raise RefusedRequest(str(error)) from None
        for problem in problems:
            self.log.warning("hpc_magics kernel: %s", problem)
        kwargs = await super().pre_launch(**kwargs)
        # the wrapped kernel's argv, {connection_file} left for the node to fill in
        kwargs["cmd"] = [*self.kernel_spec.argv, *kwargs.pop("extra_arguments", [])]
        return kwargs

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        try:
            return await self._launch(cmd, **kwargs)
        except RefusedRequest:
            raise
        except InvalidRequest as error:
            raise RefusedRequest(str(error)) from None
        except HpcMagicsError as error:
            raise StartFailed(str(error)) from None

    async def _launch(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        kernel = self._kernel()
        env = kwargs.get("env")
        # kernel-NAME, NAME the kernelspec's (its folder's name): squeue tells them apart
        name = f"kernel-{Path(self.kernel_spec.resource_dir).name or 'slurm'}"[:60]
        self.folder = folder = launch.new_folder(kernel, name)
        if takes_curve(self.kernel_spec.metadata):  # the node then makes its keys
            folder.update_meta(encryption=CURVE)
        self._ended, self.step_id = None, ""
        self._submitted_at = time.time()
        if kernel.jobid:  # a step of the user's allocation, once that runs
            self.job_id = kernel.jobid
            # indexed as this server's kernel; its meta says allocation: only the step is ours
            await _off_loop(record_submission, folder, kernel.jobid, self._submitted_at)
            folder.update_meta(state="PENDING")
        else:
            # off the server's event loop: a slow controller must not freeze every tab
            answer = await _off_loop(launch.submit, kernel, folder, cmd, name, env)
            self.job_id = answer.job_id
            await _off_loop(record_submission, folder, self.job_id, self._submitted_at,
                            answer.cluster)
            self.log.info("hpc_magics kernel: job %s submitted (folder %s)", self.job_id,
                          folder.path)
        # the first look at the queue sees the job as it is now (off the loop: scontrol)
        await _off_loop(lambda: self.queue.invalidate())
        try:
            node = await self._wait_for_node(folder, lambda: launch.start_step(
                kernel, folder, cmd, env) if kernel.jobid else None)
            self.step_id = str(node.get("step_id") or "")
            self.log.info("hpc_magics kernel: job %s runs on %s (%s)", self.job_id,
                          node.get("host"), node.get("address"))
            folder.update_meta(state="RUNNING", host=node.get("host"), step_id=self.step_id)
            # jupyter_client keeps the key as bytes
            info: dict[str, Any] = {**node["connection"],
                                    "key": str(node["connection"]["key"]).encode()}
            if kernel.connection_route() == "ssh":
                folder.update_meta(tunnel="ssh")  # hpc-magics kernel connect reopens it
                self._tunnel = await _off_loop(self._open_tunnel, node, kernel)
                info = self._tunnel.client_info(info)
        except BaseException:
            await self.kill()
            raise
        self.connection_info = cast(KernelConnectionInfo, info)
        return self.connection_info

    def _open_tunnel(self, node: dict[str, Any], kernel: KernelRequest) -> SshTunnel:
        assert self.folder is not None
        tunnel = for_kernel(node, kernel.profile(), self.folder.path / launch.TUNNEL_LOG).open()
        self._note_tunnel(tunnel)
        self.log.info("hpc_magics kernel: job %s reached through ssh %s: 127.0.0.1:%s",
                      self.job_id, tunnel.node, sorted(tunnel.local.values()))
        return tunnel

    def _note_tunnel(self, tunnel: SshTunnel) -> None:
        """Its ssh, in the folder: one a killed server left is ended by ``orphans.end_tunnel``."""
        if self.folder is not None and tunnel.process is not None:
            self.folder.update_meta(**owner(tunnel.process.pid, "tunnel"))

    async def _keep_tunnel(self) -> None:
        """The kernel runs but its tunnel ended: reopened on the same local ports."""
        tunnel = self._tunnel
        if tunnel is None or tunnel.alive() or \
                time.monotonic() - self._tunnel_tried < TUNNEL_RETRY_S:
            return
        self._tunnel_tried = time.monotonic()
        self.log.warning("hpc_magics kernel: the SSH tunnel to job %s ended: reopening it",
                         self.job_id)
        try:
            await _off_loop(tunnel.open)
            self._note_tunnel(tunnel)
        except HpcMagicsError as error:
            self.log.warning("hpc_magics kernel: %s", error)

    async def post_launch(self, **kwargs: Any) -> None:
        """A kernel whose job ended is reported dead, never resubmitted behind the user's back."""
        await super().post_launch(**kwargs)
        restarter = getattr(self.parent, "_restarter", None)  # made by start_restarter()
        if restarter is not None:
            restarter.restart_limit = 0

    async def _wait_for_node(self, folder: JobFolder,
                             start_step: Callable[[], subprocess.Popen[bytes] | None]
                             ) -> dict[str, Any]:
        """Until node.json is there, saying why the job waits whenever Slurm's reason
        changes. In an allocation, the step starts once the allocation runs."""
        said = ""
        next_look = 0.0
        while True:
            node = launch.node_info(folder)
            if node is not None:
                return node
            if self._srun is not None and self._srun.poll() is not None:
                raise SubmissionError(f"the kernel's step in job {self.job_id} ended at once: "
                                      f"{launch.log_tail(folder) or 'no output'}")
            now = time.time()
            if now >= next_look and self._srun is None:
                said, running = await self._look(folder, said)
                # no answer since the submission yet (squeue slow): look again soon; the
                # queue's own cache and lock keep that to one squeue at a time
                answered = self.queue.peek()
                fresh = answered is not None and answered.updated is not None and \
                    answered.updated >= self._submitted_at
                next_look = now + (self.queue.interval_s if fresh else 1.0)
                if running:
                    self._srun = start_step()
            if self.start_timeout and now - self._submitted_at > self.start_timeout:
                raise SubmissionError(f"job {self.job_id} did not start within "
                                      f"{self.start_timeout:.0f}s: cancelled")
            await asyncio.sleep(FILE_CHECK_S)

    async def _look(self, folder: JobFolder, said: str) -> tuple[str, bool]:
        """One look at the shared queue view: (what was said, whether the job runs)."""
        job, gone = await self._in_queue()
        if job is None:
            if not gone:
                return said, False
            if self.jobid:
                raise InvalidRequest(f"job {self.job_id} is not one of your jobs in squeue "
                                     "(ended, or not yours): start the allocation first "
                                     "(salloc, sbatch), or install the kernel without --jobid")
            raise SubmissionError(f"job {self.job_id} left the queue before the kernel "
                                  f"started: {launch.log_tail(folder) or 'no output'}")
        if job.final:
            raise SubmissionError(f"job {self.job_id} ended {job.state} before the kernel "
                                  f"started: {launch.log_tail(folder) or 'no output'}")
        if job.phase != "pending":
            return said, job.phase == "running"
        start = job.start_time
        when = f"; expected to start {time.strftime('%Y-%m-%d %H:%M', time.localtime(start))}" \
            if start else ""
        why = plain_reason(job.reason) if job.reason else "waiting to be scheduled"
        line = f"job {self.job_id} pending: {why}{when}"
        if line != said:
            self.log.info("hpc_magics kernel: %s", line)
            folder.update_meta(state="PENDING", reason=job.reason, waiting=line)
        return line, False

    @property
    def has_process(self) -> bool:
        return self.job_id is not None

    @cached_property
    def queue(self) -> JobQueue:
        """One per kernel: its background squeue is never started twice at once."""
        return JobQueue(answer_within_s=ANSWER_WITHIN_S)

    async def poll(self) -> int | None:
        """None while the job runs (its tunnel, if any, kept open meanwhile)."""
        code = await self._poll_job()
        if code is None:
            await self._keep_tunnel()
        return code

    async def _poll_job(self) -> int | None:
        """None while the job runs: the process of a step, else the cached squeue view."""
        if self.job_id is None or self._ended is not None:
            return self._ended if self.job_id is not None else 0
        if self._srun is not None:
            return self._srun.poll()
        job, gone = await self._in_queue()
        if gone:
            self._ended = 0
            return 0
        # a silent scheduler (its last view kept): the kernel is not dead for that
        return (0 if job.phase == "done" else 1) if job is not None and job.final else None

    async def _in_queue(self) -> tuple[JobSnapshot | None, bool]:
        """The job in the shared queue view, and whether it is gone: missing from a view
        answered since sbatch (an older one may not list it yet), and squeue says so."""
        view = await _off_loop(self.queue.view)
        job = view.find(str(self.job_id))
        gone = job is None and view.error is None and view.updated is not None and \
            view.updated >= self._submitted_at and \
            await _off_loop(launch.gone_from_queue, str(self.job_id))
        return job, gone

    async def wait(self) -> int | None:
        while True:
            code = await self.poll()
            if code is not None:
                return code
            await asyncio.sleep(1.0)

    async def send_signal(self, signum: int) -> None:
        """SIGINT & co. to the kernel's step (``scancel --signal``); SIGKILL cancels."""
        if self.job_id is None or self._ended is not None or signum == 0:
            return
        if signum == signal.SIGKILL:
            await self.kill()
            return
        step = self.step_id or "0"
        name = signal.Signals(signum).name.removeprefix("SIG")
        failed = await _off_loop(scancel, f"{self.job_id}.{step}", name)
        if failed:
            self.log.warning("hpc_magics kernel: scancel --signal=%s %s.%s: %s", name,
                             self.job_id, step, failed)

    async def kill(self, restart: bool = False) -> None:
        """scancel the job (or the step); the queue view is refreshed for the next look."""
        if self.job_id is None or self._ended is not None:
            return
        # never the user's allocation
        target = scancel_target(str(self.job_id), self.step_id, bool(self.jobid))
        step_over = self._srun is not None and self._srun.poll() is not None
        if target is not None and not step_over:
            failed = await _off_loop(scancel, target)
            if failed:
                self.log.warning("hpc_magics kernel: scancel %s: %s", target, failed)
        if self._srun is not None:
            self._srun.terminate()  # srun ends the step it started
            try:
                await _off_loop(self._srun.wait, CANCEL_GONE_WITHIN_S)
            except subprocess.TimeoutExpired:
                self._srun.kill()
        self._ended = -signal.SIGTERM
        await self._close_tunnel()
        await _off_loop(self.queue.invalidate)
        if self.folder is not None:
            # kernel_over: for a step, squeue's state is the allocation's (still running)
            self.folder.update_meta(state="CANCELLED", state_source="kernel shutdown",
                                    kernel_over=True)

    async def _close_tunnel(self) -> None:
        if self._tunnel is not None:
            await _off_loop(self._tunnel.close)
            self._tunnel = None

    terminate = kill

    async def cleanup(self, restart: bool = False) -> None:
        await self.kill()
        await self._close_tunnel()  # the job ended by itself: its tunnel goes too
        if self.folder is not None:
            launch.forget_connection(self.folder)
        self.job_id, self._srun = None, None

    async def get_provisioner_info(self) -> dict[str, Any]:
        info: dict[str, Any] = await super().get_provisioner_info()
        info.update(job_id=self.job_id, step_id=self.step_id,
                    folder=str(self.folder.path) if self.folder else None)
        return info

    async def load_provisioner_info(self, provisioner_info: dict[str, Any]) -> None:
        await super().load_provisioner_info(provisioner_info)
        self.job_id = provisioner_info.get("job_id")
        self.step_id = str(provisioner_info.get("step_id") or "")
        folder = provisioner_info.get("folder")
        self.folder = JobFolder(Path(folder)) if folder else None
