"""The server extension: configuration, shared state, idle watcher, and the stop sequence.

Configure it like any Jupyter class, e.g. in ``jupyter_server_config.py``::

    c.HpcMagicsServer.idle_stop_minutes = 60
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tornado.ioloop import IOLoop, PeriodicCallback
from traitlets import Float, List, Unicode, default
from traitlets.config import LoggingConfigurable

from ..core.errors import HpcMagicsError
from ..scheduler import job_index
from ..scheduler.own_job import (
    OwnJob,
    own_job,
    own_job_from_environment,
    own_job_id,
    told_everything,
)
from ..scheduler.queue import ANSWER_WITHIN_S, POLL_INTERVAL_ENV, JobQueue, poll_interval
from ..scheduler.server_status import ServerStatus, server_status
from ..scheduler.watcher import Watcher
from . import idle, kernel_jobs, notebook_outputs
from .allocation_view import chosen_account, read_allocation
from .events import JobTracker, TrackedJob

SETTINGS_KEY = "hpc_magics"
FIRST_ANSWER_WAIT_S = 0.5  # the allocation: worth half a second, later answers come by themselves


@dataclass
class AskedRarely:
    """A slow question (a scheduler command) for the status bar, asked in a worker thread:
    one at a time and no more often than ``refresh_s``, however many tabs ask. A request
    waits ``wait_s`` at most for the answer being asked, else gets the last one (None
    before the first): a silent scheduler never keeps a page waiting."""

    read: Callable[[], Any]
    refresh_s: float
    wait_s: float
    log: Any
    answer: Any = None
    asked_at: float = -math.inf
    _asking: asyncio.Future[Any] | None = None

    async def current(self) -> Any:
        if (self._asking is None or self._asking.done()) and \
                time.time() - self.asked_at >= self.refresh_s:
            self.asked_at = time.time()
            self._asking = asyncio.get_running_loop().run_in_executor(None, self._read)
        if self._asking is not None and not self._asking.done():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._asking), self.wait_s)
        return self.answer

    def _read(self) -> None:
        try:  # set here, in the worker: a request sees it once the thread is done
            self.answer = self.read()
        except Exception as error:  # keep the last answer; say why in the server log
            self.log.warning("hpc_magics: asking the scheduler failed: %s", error)


class HpcMagicsServer(LoggingConfigurable):
    """Settings of the hpc_magics server extension (``c.HpcMagicsServer.<name>``)."""

    idle_stop_minutes = Float(
        0.0, config=True,
        help="Stop the server (and cancel its Slurm job) after this many idle minutes "
             "(a fraction is fine: 0.5); 0 = off.")
    idle_warning_minutes = Float(
        5.0, config=True,
        help="Minutes before an idle stop at which the front end offers 'keep working'.")
    idle_check_interval_s = Float(
        15.0, config=True, help="How often the idle watcher looks at the server's activity.")
    warn_minutes = List(
        [15, 5], config=True,
        help="Minutes before the walltime ends at which the front end warns.")
    jobs_poll_interval_s = Float(
        config=True,
        help="At most one squeue (and one sacct) per this many seconds for the user, across "
             "the server, its kernels and every tab; kernels started by the server follow it. "
             "Default: HPC_MAGICS_POLL_INTERVAL, else 10.")
    own_job_refresh_s = Float(
        60.0, config=True,
        help="How long the server's own job record (end time, nodes) is reused.")
    events_interval_s = Float(
        15.0, config=True,
        help="How often the server looks at the user's jobs to notice the ones that ended "
             "(one squeue per interval for the user, whatever the number of tabs).")
    ended_jobs_shown_minutes = Float(
        60.0, config=True, help="How long an ended job stays in the jobs list.")
    scheduler_timeout_s = Float(
        20.0, config=True, help="Time-out for each squeue/scontrol/scancel call.")
    allocation_account = Unicode(
        "", config=True,
        help="The account whose allocation the status bar shows; empty: SBATCH_ACCOUNT, "
             "SLURM_ACCOUNT, else Slurm's default account of the user.")
    allocation_profile = Unicode(
        "", config=True,
        help="A profile whose balance_command tells the allocation (else sshare is asked).")
    allocation_refresh_minutes = Float(
        10.0, config=True, help="How often the allocation is asked about (sshare).")
    allocation_low_percent = Float(
        10.0, config=True, help="Below this share of the limit, the allocation shows as low.")
    shutdown_grace_s = Float(
        0.3, config=True, help="Pause after answering a stop request before shutting down.")

    @default("jobs_poll_interval_s")
    def _default_jobs_poll_interval_s(self) -> float:
        return poll_interval()

    @property
    def idle_seconds(self) -> float:
        return self.idle_stop_minutes * 60.0


class ServerState:
    """What the handlers share: settings, the job queue, our job, activity, the stop sequence."""

    def __init__(self, serverapp: Any, config: HpcMagicsServer) -> None:
        self.serverapp = serverapp
        self.config = config
        self.job_id = own_job_id()  # from the server process's environment, never a request
        self.queue = JobQueue(interval_s=config.jobs_poll_interval_s,
                              timeout_s=config.scheduler_timeout_s,
                              answer_within_s=ANSWER_WITHIN_S)
        # one interval for the user: the kernels started from now on poll at the server's
        # (the shared cache is asked as often as its most eager reader wants)
        os.environ[POLL_INTERVAL_ENV] = str(self.queue.interval_s)
        self.watcher = Watcher(self.queue)  # the handlers read and cancel through it
        # kernels started from now on inherit it and record it with each submission
        self.server_id = server_instance_id(self.job_id)
        os.environ[job_index.SERVER_ID_ENV] = self.server_id
        self.tracker = JobTracker(self.watcher, self.server_id, self.job_id,
                                  Path(serverapp.root_dir).expanduser(),
                                  keep_ended_s=config.ended_jobs_shown_minutes * 60.0)
        self._cycle_running = False
        self._events_callback: PeriodicCallback | None = None
        self.last_user_activity = time.time()
        self.stopping = False
        self._idle_callback: PeriodicCallback | None = None
        timeout = config.scheduler_timeout_s
        self.own_job_asked = AskedRarely(lambda: own_job(timeout_s=timeout),
                                         config.own_job_refresh_s, ANSWER_WITHIN_S, config.log)
        self.allocation = AskedRarely(lambda: read_allocation(
            chosen_account(config.allocation_account), config.allocation_profile,
            config.allocation_low_percent / 100, timeout),
            config.allocation_refresh_minutes * 60.0, FIRST_ANSWER_WAIT_S, config.log)

    # ------------------------------------------------------------------ own job
    async def own_job(self) -> tuple[OwnJob | None, bool]:
        """Our job, and whether the scheduler's answer is still pending (a later look says
        more). The environment answers at once, all of it on 24.11 and later."""
        told = own_job_from_environment()
        if told is None or told_everything(told):
            return told, False
        asked = await self.own_job_asked.current()
        return (told, True) if asked is None else (asked, False)

    async def status(self) -> ServerStatus:
        job, pending = await self.own_job()
        stop_at = self.idle_stop_at()
        return server_status(
            job, time.time(),
            idle_stop_minutes=None if stop_at is None else round(self.config.idle_seconds / 60, 3),
            idle_stop_at=stop_at,
            idle_warning_minutes=self.config.idle_warning_minutes,
            warn_minutes=tuple(int(m) for m in self.config.warn_minutes), pending=pending,
        )

    # ------------------------------------------------------------------ jobs
    async def refresh_jobs(self, max_age_s: float | None = None) -> None:
        """One watcher cycle in a worker thread (cheap while the queue view is fresh)."""
        max_age = self.config.jobs_poll_interval_s if max_age_s is None else max_age_s
        await asyncio.get_running_loop().run_in_executor(None, self.tracker.cycle, max_age)

    def start_job_events(self) -> None:
        interval = max(self.config.events_interval_s, 1.0)
        self._events_callback = PeriodicCallback(self._events_tick, interval * 1000.0,
                                                 jitter=0.1)
        self._events_callback.start()
        IOLoop.current().add_callback(self._events_tick)

    async def _events_tick(self) -> None:
        if self._cycle_running or self.stopping:
            return  # a slow scheduler: never pile cycles up
        self._cycle_running = True
        try:
            # never more often than the queue's own interval allows
            await self.refresh_jobs(max(self.config.events_interval_s,
                                        self.config.jobs_poll_interval_s))
            # ended cells' outputs into their notebooks nobody has open (no scheduler call)
            await notebook_outputs.write_outputs(self.serverapp, self.tracker, self.config.log)
        except Exception as exc:  # keep the server up; the next tick tries again
            self.config.log.warning("hpc_magics: looking at jobs failed: %s", exc)
        finally:
            self._cycle_running = False

    async def say_left_behind(self) -> None:
        """Kernel jobs a killed server left running: a restarted server does not take them
        over (jupyter_server keeps no kernels across restarts), so say, once, how to reach
        them again or cancel them (one squeue, only if some owner is gone)."""
        from ..kernel.orphans import offer_left_behind

        await asyncio.get_running_loop().run_in_executor(
            None, offer_left_behind, "hpc-magics kernel cleanup", self.config.log.warning)

    def kernel_jobs(self) -> list[TrackedJob]:
        """The live kernel jobs started from this server (the last cycle's)."""
        return [job for job in self.tracker.jobs() if kernel_jobs.is_kernel_job(job)]

    # ------------------------------------------------------------------ activity
    def note_user_activity(self) -> None:
        self.last_user_activity = time.time()

    def idle_stop_at(self) -> float | None:
        """Epoch second at which the server counts as idle for ``idle_seconds`` (None: no
        idle auto-stop)."""
        if self.config.idle_seconds <= 0:
            return None
        busy, recorded = idle.server_activity(self.serverapp)
        now = time.time()
        return idle.last_activity(self.last_user_activity, now, busy, recorded) + \
            self.config.idle_seconds

    def start_idle_watch(self) -> None:
        if self.config.idle_seconds <= 0:
            return
        interval = min(self.config.idle_check_interval_s, max(self.config.idle_seconds / 4, 0.5))
        self._idle_callback = PeriodicCallback(self._check_idle, interval * 1000.0)
        self._idle_callback.start()
        self.config.log.info("hpc_magics: idle auto-stop after %.0f s without activity",
                             self.config.idle_seconds)

    def _check_idle(self) -> None:
        stop_at = self.idle_stop_at()
        if self.stopping or stop_at is None or time.time() < stop_at:
            return
        kernels = kernel_jobs.describe(self.kernel_jobs())
        self.config.log.warning("hpc_magics: no activity for %.0f s, stopping the server%s%s",
                                self.config.idle_seconds,
                                f" and cancelling job {self.job_id}" if self.job_id else "",
                                f", ending kernel jobs: {kernels}" if kernels else "")
        IOLoop.current().add_callback(self.shutdown, "idle")

    # ------------------------------------------------------------------ stopping
    async def shutdown(self, reason: str) -> None:
        """Shut kernels down, cancel our own job (only ``SLURM_JOB_ID``), stop the loop."""
        from ..kernel.orphans import cancel, scancel

        if self.stopping:
            return
        self.stopping = True
        for callback in (self._idle_callback, self._events_callback):
            if callback is not None:
                callback.stop()
        log = self.config.log
        log.info("hpc_magics: stopping the server (%s)", reason)
        await asyncio.sleep(self.config.shutdown_grace_s)  # let the answer reach the browser
        app = self.serverapp
        try:  # a kernel job submitted since the last look is listed too
            await asyncio.wait_for(self.refresh_jobs(), ANSWER_WITHIN_S)
        except Exception as exc:  # the last list still serves
            log.info("hpc_magics: no fresh look at the jobs before stopping: %s", exc)
        kernel_jobs_before = self.kernel_jobs()  # listed before their kernels go
        try:
            await app._cleanup()  # kernels, terminals, server info file; as /api/shutdown does
        except Exception as exc:  # keep going: the job must still end
            log.warning("hpc_magics: cleanup before stopping failed: %s", exc)
        # kernel jobs whose kernels did not take them along (a kernel its manager lost, one
        # whose shutdown failed): scancel, only the kernel's job or step
        loop = asyncio.get_running_loop()
        for line in await loop.run_in_executor(None, cancel, kernel_jobs.left_behind(
                kernel_jobs_before), "server stopped"):
            log.info("hpc_magics: %s", line)
        if self.job_id is not None:
            try:
                failed = await loop.run_in_executor(
                    None, scancel, self.job_id, None, self.config.scheduler_timeout_s)
            except HpcMagicsError as exc:
                failed = str(exc)
            if failed:
                log.warning("hpc_magics: scancel %s failed: %s", self.job_id, failed)
        http_server = getattr(app, "http_server", None)
        if http_server is not None:
            http_server.stop()
        IOLoop.current().stop()


def server_instance_id(job_id: str | None) -> str:
    """Which server a kernel belongs to: its Slurm job (a restart in the same job is the
    same server to the user), else this process."""
    if job_id is not None:
        return f"slurm-job-{job_id}"
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
