"""A real JupyterHub spawns a user's server as a Slurm job (batchspawner's SlurmSpawner)
with the administrator's guide's own config file, docs/admin/jupyterhub_config-batchspawner.py,
so that the example cannot rot: hpc_magics' extension answers through the hub's proxy from
inside the job batchspawner submitted, and the hub's stop ends that job.

The tests run as one ordinary user, so the hub here runs as that user and spawns for
itself: batchspawner's ``sudo -E -u {username}`` prefix is empty, the one difference from
a site's hub (root), besides ports, files and addresses. Its proxy, configurable-http-proxy,
is the npm package scripts/run-tests installs in .venv/hub-proxy.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from server.conftest import SERVER_CONFIG, port_to_hand_on

from hpc_magics.scheduler import commands
from hpc_magics.scheduler.queue import login_name

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_CONFIG = REPO_ROOT / "docs" / "admin" / "jupyterhub_config-batchspawner.py"
PROXY = Path(sys.prefix) / "hub-proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
JUPYTERHUB = Path(sys.executable).parent / "jupyterhub"
HTTP_TIMEOUT_S = 30.0
START_TIMEOUT_S = 180.0

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

# What the test changes of the example: where the hub listens and keeps its files, no
# sudo (the hub runs as the user), the test cluster's nodes being this host, a short job.
TEST_CONFIG = """\
load_subconfig({example!r})
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.JupyterHub.hub_connect_ip = "127.0.0.1"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = [{proxy!r}]
c.JupyterHub.db_url = "sqlite:///{folder}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{folder}/cookie_secret"
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = {{{user!r}}}
c.JupyterHub.services = [{{"name": "hub-test", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{
    "name": "hub-test", "services": ["hub-test"],
    "scopes": ["admin:users", "admin:servers", "admin:server_state", "tokens",
               "access:servers"],
}}]
c.SlurmSpawner.exec_prefix = ""
c.SlurmSpawner.state_exechost_exp = "127.0.0.1"
c.SlurmSpawner.req_homedir = "{folder}"
c.SlurmSpawner.req_runtime = "10"
c.SlurmSpawner.req_nprocs = "1"
c.SlurmSpawner.req_memory = "1G"
c.SlurmSpawner.environment = {{
    **c.SlurmSpawner.environment,
    "JUPYTER_CONFIG_DIR": "{folder}/config",
    "JUPYTER_RUNTIME_DIR": "{folder}/runtime",
    "JUPYTER_PLATFORM_DIRS": "0",
}}
"""


@dataclass(frozen=True)
class Hub:
    url: str  # the proxy's public address, ends without "/"
    token: str  # the test service's
    folder: Path
    process: subprocess.Popen[bytes]

    @property
    def log(self) -> str:
        return (self.folder / "hub.log").read_text(errors="replace")

    def api(self, method: str, path: str, token: str | None = None,
            **kwargs: Any) -> requests.Response:
        return requests.request(method, f"{self.url}/hub/api/{path}", timeout=HTTP_TIMEOUT_S,
                                headers={"Authorization": f"token {token or self.token}"},
                                **kwargs)


def _wait(what: str, hub: Hub, ready: Any, timeout: float = START_TIMEOUT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        answer = ready()
        if answer:
            return answer
        if hub.process.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{what}: not so within {timeout:.0f} s\n{hub.log[-4000:]}",
                        pytrace=False)
        time.sleep(0.5)


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=5).ok
    except requests.RequestException:
        return False


@pytest.fixture
def hub(slurm_cluster: object, tmp_path: Path) -> Iterator[Hub]:
    if os.environ.get("HPC_MAGICS_RELEASE"):
        pytest.skip("the hub test runs on the default test cluster only (its nodes are this "
                    "host); a --release cluster's nodes are hosts apart")
    if not PROXY.exists() or shutil.which("node") is None:
        pytest.skip(f"no configurable-http-proxy at {PROXY} (scripts/run-tests installs it "
                    "with npm as root)")
    folder = tmp_path / "hub"
    (folder / "config" / "jupyter_server_config.d").mkdir(parents=True)
    (folder / "runtime").mkdir(mode=0o700)
    shutil.copy(SERVER_CONFIG, folder / "config" / "jupyter_server_config.d")
    port, token = port_to_hand_on(), secrets.token_hex(16)
    config = folder / "jupyterhub_config.py"
    config.write_text(TEST_CONFIG.format(
        example=str(EXAMPLE_CONFIG), port=port, hub_port=port_to_hand_on(),
        proxy_api_port=port_to_hand_on(), proxy=str(PROXY), folder=folder, user=login_name(),
        token=token))
    env = commands.scrubbed_environment()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    with open(folder / "hub.log", "wb") as log:
        process = subprocess.Popen([str(JUPYTERHUB), "-f", str(config)], cwd=folder, env=env,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    started = Hub(f"http://127.0.0.1:{port}", token, folder, process)
    try:
        _wait("the hub answers", started, lambda: _answers(f"{started.url}/hub/api/"), 60)
        yield started
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the hub stops the servers it spawned
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        _stop_proxy(folder / "jupyterhub-proxy.pid")


def _stop_proxy(pid_file: Path) -> None:
    """The proxy runs in its own session: a hub stopped while starting leaves it running."""
    try:
        pid = int(pid_file.read_text().strip())
        if b"configurable-http-proxy" in Path(f"/proc/{pid}/cmdline").read_bytes():
            os.kill(pid, signal.SIGTERM)  # that very proxy, not a process that got its pid
    except (OSError, ValueError):
        pass  # stopped by the hub (which removes the file), or gone already


def _job_state(job_id: str) -> str:
    answer = commands.run(["squeue", "-h", "-j", job_id, "-o", "%T"], timeout=30)
    return answer.stdout.strip() if answer.ok else ""


def test_a_hub_spawns_the_server_as_a_slurm_job_with_hpc_magics(hub: Hub) -> None:
    user = login_name()
    assert hub.api("POST", f"users/{user}").status_code in (201, 409)
    spawn = hub.api("POST", f"users/{user}/server")
    assert spawn.status_code in (201, 202), spawn.text

    def server_ready() -> dict[str, Any] | None:
        model = hub.api("GET", f"users/{user}").json()
        server = model.get("servers", {}).get("")
        return server if server and server.get("ready") else None

    server = _wait("the user's server is ready", hub, server_ready)
    job_id = str(server["state"]["job_id"])
    assert job_id.isdigit(), server["state"]
    assert _job_state(job_id) == "RUNNING"

    # the user's own token, through the hub's proxy, to the extension in the job
    token = hub.api("POST", f"users/{user}/tokens",
                    json={"scopes": [f"access:servers!user={user}"], "expires_in": 600})
    assert token.status_code == 201, token.text
    status = requests.get(f"{hub.url}/user/{user}/hpc-magics/server", timeout=HTTP_TIMEOUT_S,
                          headers={"Authorization": f"token {token.json()['token']}"})
    assert status.status_code == 200, status.text
    assert status.json()["in_slurm_job"] is True
    assert status.json()["job_id"] == job_id
    assert status.json()["idle_stop_minutes"] == 120  # the example's args reach the server

    stop = hub.api("DELETE", f"users/{user}/server")
    assert stop.status_code in (202, 204), stop.text
    _wait("the hub has no server for the user", hub,
          lambda: not hub.api("GET", f"users/{user}").json().get("servers"))
    _wait(f"job {job_id} has left the queue", hub,
          lambda: _job_state(job_id) in ("", "COMPLETED", "CANCELLED", "FAILED"), 60)
