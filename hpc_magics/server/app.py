"""Loads the server extension into a jupyter_server ``ServerApp``: its state, its routes
(``handlers.py``, which reads the state) and the request hook that counts activity."""

from __future__ import annotations

from typing import Any

from tornado.ioloop import IOLoop

from . import idle
from .extension import SETTINGS_KEY, HpcMagicsServer, ServerState
from .handlers import route_table


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
