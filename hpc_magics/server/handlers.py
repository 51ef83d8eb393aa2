"""REST handlers under ``<base_url>hpc-magics/`` (contract: server-api.md).

Every method is ``@tornado.web.authenticated`` (token, or cookie plus XSRF for POSTs)
and ``@authorized`` by jupyter_server's ``Authorizer`` on the resource ``hpc_magics``:
looking is ``read``, keeping the server alive ``write``, stopping it and cancelling a job
``execute`` (the stop also needs jupyter_server's own ``write`` on ``server``, what its
``/api/shutdown`` asks). Tests enumerate the routes and fail on one that is not both.
Polling GETs set ``_track_activity = False`` so they never keep an idle server alive.
``load`` installs them, the state they read (``extension.py``) and the request hook that
counts activity into a ``ServerApp``.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.ioloop import IOLoop

from ..core.errors import HpcMagicsError
from ..core.jobids import parse_job_id
from . import idle
from .events import TrackedJob
from .extension import SETTINGS_KEY, HpcMagicsServer, ServerState
from .kernel_jobs import kernel_job_json

PREFIX = "hpc-magics"
# Plain, array task or range, het component: 123, 123_4, 123_[1-5] (%5B/%5D when quoted),
# 123+0. The handler parses the decoded id strictly; the route only keeps out slashes.
JOB_ID_PATTERN = r"[0-9][0-9_+\[\],%A-Fa-f-]*"


class HpcMagicsHandler(APIHandler):
    auth_resource = "hpc_magics"  # what a site's Authorizer is asked about

    @property
    def state(self) -> ServerState:
        return self.settings[SETTINGS_KEY]

    def write_json(self, payload: dict[str, Any]) -> None:
        self.set_header("Cache-Control", "no-store")
        self.finish(json.dumps(payload))


class ServerInfoHandler(HpcMagicsHandler):
    _track_activity = False

    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        state = self.state
        status = await state.status()
        # the allocation: asked every few minutes at most, the last answer meanwhile
        self.write_json({**status.to_json(), "allocation": await state.allocation.current()})


class ServerStopHandler(HpcMagicsHandler):
    @web.authenticated
    @authorized("execute")
    @authorized("write", resource="server")  # as jupyter_server's own shutdown
    async def post(self) -> None:
        # The body is deliberately never read: the only job this can cancel is the
        # server's own SLURM_JOB_ID, fixed when the extension loaded.
        state = self.state
        kernels = state.kernel_jobs()
        # the user's own allocations (--jobid) stay: only the kernels' steps end
        self.write_json({"stopping": True, "job_id": state.job_id,
                         "kernel_jobs": [job.job_id for job in kernels if not job.allocation],
                         "allocations_left_running": sorted({job.job_id for job in kernels
                                                             if job.allocation})})
        IOLoop.current().add_callback(state.shutdown, "stop requested")


class KeepAliveHandler(HpcMagicsHandler):
    @web.authenticated
    @authorized("write")
    async def post(self) -> None:
        state = self.state
        state.note_user_activity()
        self.write_json({"idle_stop_at": state.idle_stop_at()})


def job_json(job: TrackedJob, state: ServerState) -> dict[str, Any]:
    """One row of the job list: the watcher's state; squeue's details while queued."""
    queued = job.queued
    return {
        "job_id": job.job_id, "name": job.name, "state": job.status.state,
        "phase": job.status.phase, "final": job.final, "source": job.status.source,
        "note": job.status.note,
        "partition": queued.partition if queued else None,
        "nodes": int(queued.nodes) if queued and queued.nodes.isdigit() else None,
        "elapsed_s": queued.elapsed_s if queued else None,
        "time_limit_s": queued.time_limit_s if queued else None,
        "end_time": queued.end_time if queued else None,
        "reason": queued.reason if queued else None,
        "is_server": job.job_id == state.job_id,
        "kind": job.kind or ("cell" if job.folder else "other"),  # kernel, notebook, sweep
        "folder": job.folder_in_root,
        "from_this_server": job.from_this_server, "ended_at": job.ended_at,
    }


# how long GET /jobs waits for a fresh look before answering with the last list
LIST_WAIT_S = 0.6


async def fresh_enough(state: ServerState, wait_s: float = LIST_WAIT_S) -> str | None:
    """One cycle (cheap while the queue view is fresh), waited for ``wait_s`` at most; why
    the list is not fresh, or None."""
    try:  # never keep the page waiting on a silent scheduler: the cycle goes on alone
        await asyncio.wait_for(state.refresh_jobs(), timeout=wait_s)
    except asyncio.TimeoutError:
        return "the scheduler is slow to answer: this is the last list, retrying"
    except Exception as exc:  # the last list still helps; say why it is not fresh
        state.config.log.warning("hpc_magics: looking at jobs failed: %s", exc)
        return f"could not look at the jobs: {exc}".splitlines()[0]
    return None


class JobsHandler(HpcMagicsHandler):
    """The user's jobs as this server tracks them (one cycle, waited for briefly)."""

    _track_activity = False

    def listing(self, state: ServerState, now: float) -> dict[str, Any]:
        return {"jobs": [job_json(job, state) for job in state.tracker.jobs()],
                "server_job_id": state.job_id, "server_id": state.server_id}

    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        state = self.state
        error = await fresh_enough(state)
        now = time.time()
        self.write_json({**self.listing(state, now), "updated": state.tracker.updated,
                         "error": error or state.tracker.error, "now": now})


class KernelJobsHandler(JobsHandler):
    """The kernel jobs of this server for the status bar (no more squeue than the list)."""

    def listing(self, state: ServerState, now: float) -> dict[str, Any]:
        return {"kernels": [kernel_job_json(job, now) for job in state.kernel_jobs()]}


class JobEventsHandler(HpcMagicsHandler):
    """Jobs that ended since event ``since``; without ``since``: only where the list is."""

    _track_activity = False

    @web.authenticated
    @authorized("read")
    async def get(self) -> None:
        state = self.state
        since_text = self.get_query_argument("since", None)
        try:
            since = int(since_text) if since_text is not None else None
        except ValueError:
            raise web.HTTPError(400, f"since={since_text!r} is not a number: use the "
                                     "'last' of the previous answer") from None
        events, last = state.tracker.events_since(since)
        self.write_json({
            # each as the job list shows it, with its number and when it ended
            "events": [{**job_json(job, state), "seq": seq, "at": job.ended_at}
                       for seq, job in events], "last": last,
            "server_id": state.server_id,
            "interval_s": state.config.events_interval_s, "now": time.time(),
        })


class JobCancelHandler(HpcMagicsHandler):
    @web.authenticated
    @authorized("execute")
    async def post(self, job_id: str) -> None:
        state = self.state
        parsed = parse_job_id(job_id)
        if parsed is None:
            raise web.HTTPError(400, f"{job_id!r} is not a Slurm job id: use 123, 123_4, "
                                     "123_[1-5] or 123+0")
        if state.job_id is not None and parsed.base == state.job_id:
            raise web.HTTPError(409, f"job {job_id} runs this server: use POST "
                                     f"/{PREFIX}/server/stop to save and stop it")
        try:
            await asyncio.get_running_loop().run_in_executor(None, state.watcher.cancel,
                                                             str(parsed))
        except LookupError as exc:
            raise web.HTTPError(404, str(exc)) from None
        except HpcMagicsError as exc:
            raise web.HTTPError(502, str(exc)) from None
        # the list (which GET /jobs serves while a cycle is slow) shows the cancel before
        # this answers: one cycle now, after any cycle begun before the scancel (cancelled
        # all the same when it fails: the next cycle shows it)
        await fresh_enough(state, state.config.scheduler_timeout_s)
        self.write_json({"cancelled": job_id})


ROUTES: dict[str, type[HpcMagicsHandler]] = {
    "server": ServerInfoHandler, "server/stop": ServerStopHandler,
    "server/keep-alive": KeepAliveHandler, "jobs": JobsHandler, "jobs/events": JobEventsHandler,
    "kernels": KernelJobsHandler, f"jobs/({JOB_ID_PATTERN})/cancel": JobCancelHandler,
}


def route_table(base_url: str) -> list[tuple[str, type[HpcMagicsHandler]]]:
    return [(url_path_join(base_url, PREFIX, path), handler) for path, handler in ROUTES.items()]


def _observe_requests(state: ServerState, web_app: Any) -> None:
    """Count a person's requests as activity by wrapping tornado's per-request log hook."""
    original = web_app.settings.get("log_function")

    def log_and_observe(handler: Any) -> None:
        if idle.counts_as_activity(handler):
            state.note_user_activity()
        if original is not None:
            original(handler)
        else:
            type(web_app).log_request(web_app, handler)

    web_app.settings["log_function"] = log_and_observe


def load(serverapp: Any) -> ServerState:
    """Install handlers and the idle watcher into a jupyter_server ``ServerApp``."""
    config = HpcMagicsServer(parent=serverapp)
    state = ServerState(serverapp, config)
    web_app = serverapp.web_app
    web_app.settings[SETTINGS_KEY] = state
    web_app.add_handlers(".*$", route_table(web_app.settings["base_url"]))
    _observe_requests(state, web_app)
    IOLoop.current().add_callback(state.start_idle_watch)
    IOLoop.current().add_callback(state.start_job_events)
    IOLoop.current().add_callback(state.say_left_behind)
    serverapp.log.info("hpc_magics: server extension loaded (%s)",
                       f"Slurm job {state.job_id}" if state.job_id else "not in a Slurm job")
    return state
