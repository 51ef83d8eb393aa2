"""One poll interval for a user's server and kernels, set once by the site."""

from __future__ import annotations

import pytest

from hpc_magics.scheduler.queue import POLL_INTERVAL_ENV
from hpc_magics.server.extension import HpcMagicsServer

from .conftest import StartLocal, execute

pytestmark = pytest.mark.timeout(120)


def test_the_servers_interval_is_the_sites_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(POLL_INTERVAL_ENV, "42")
    assert HpcMagicsServer().jobs_poll_interval_s == 42.0
    monkeypatch.delenv(POLL_INTERVAL_ENV)
    assert HpcMagicsServer().jobs_poll_interval_s == 10.0


def test_the_kernels_poll_at_the_servers_interval(local_server: StartLocal) -> None:
    # set in jupyter_server_config.py only: the kernels (their own watchers) follow it,
    # so the shared squeue cache is not asked more often than the server's setting
    server = local_server(config_py="c.HpcMagicsServer.jobs_poll_interval_s = 7\n")
    kernel = server.post("api/kernels", json={"name": "python3"}).json()
    said = execute(server, kernel["id"], "from hpc_magics.scheduler.queue import poll_interval\n"
                                         "print(poll_interval())")
    assert said.strip() == "7.0"
