"""The administrator's guide, done as it says (issue 28's "done when"): a real JupyterHub
with batchspawner's SlurmSpawner, configured by the guide's own file
(docs/admin/jupyterhub_config-batchspawner.py, so that the example cannot rot), runs from
an environment made the way docs/admin/install.md says (a fresh venv, the built wheel
installed with ``[server]`` beside jupyterhub and batchspawner), as a hub account (the test
user) that spawns for another user (the second test user) through batchspawner's real
``exec_prefix``, ``sudo -E -u {username}`` (the sudo rule of scripts/run-tests stands in
for the site's). Through the hub's proxy, with that user's token: the extension answers
from inside the server's job, a kernel in the server runs ``%hpc_doctor`` (every line
holds) and a ``%%sbatch --wait`` cell; the hub's stop ends the job.

The environment is cached per wheel in /var/tmp, not in the test user's ~/.cache: the
other user's server and kernels run from it, and the test user's home is private. Its
proxy, configurable-http-proxy, is the npm package scripts/run-tests installs in
.venv/hub-proxy.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pwd
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
from server.conftest import RunningServer, execute, port_to_hand_on

from hpc_magics.core.users import login_name
from hpc_magics.doctor.checks import CHECKS
from hpc_magics.scheduler import commands

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_CONFIG = REPO_ROOT / "docs" / "admin" / "jupyterhub_config-batchspawner.py"
PROXY = Path(sys.prefix) / "hub-proxy" / "node_modules" / ".bin" / "configurable-http-proxy"
# the environment's wheels, made where the package index is reachable (scripts/run-tests'
# install-only pass) for a run where it is not (scripts/fresh-debian's offline part)
WHEELHOUSE = Path(sys.prefix) / "hub-wheels"
# "python3 -m venv" on a fresh Debian machine: the system's Python, not this .venv's
SYSTEM_PYTHON = Path(sys.base_prefix) / "bin" / "python3"
HTTP_TIMEOUT_S = 30.0
START_TIMEOUT_S = 180.0
INSTALL_TIMEOUT_S = 900.0
SPAWNED_USER = "hpcuser2"  # scripts/run-tests' second test user

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# What the test changes of the example: where the hub listens and keeps its files, the
# test cluster's nodes being this host, a short small job, a fresh folder of the user's.
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
c.SlurmSpawner.state_exechost_exp = "127.0.0.1"
c.SlurmSpawner.req_homedir = "{home}"
c.SlurmSpawner.req_runtime = "10"
c.SlurmSpawner.req_nprocs = "1"
c.SlurmSpawner.req_memory = "1G"
c.SlurmSpawner.environment = {{
    **c.SlurmSpawner.environment,
    # the user's own Jupyter folders, fresh: only the environment's etc/jupyter enables
    # the extension, only its kernel (ipykernel's python3) runs the notebook
    "JUPYTER_CONFIG_DIR": "{home}/config",
    "JUPYTER_DATA_DIR": "{home}/data",
    "JUPYTER_RUNTIME_DIR": "{home}/runtime",
    "JUPYTER_PLATFORM_DIRS": "0",
    # the environment lies in /var/tmp, which this one-host cluster's node shares
    "HPC_MAGICS_NODES_SHARE_TMP": "1",
}}
"""


# ------------------------------------------------------------ the environment, as the guide says
def _wheel(build_into: Path) -> Path:
    """The wheel scripts/check-package built into dist/, else one built here."""
    built = sorted((REPO_ROOT / "dist").glob("hpc_magics-*.whl"))
    if not built:
        done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir",
                               str(build_into), str(REPO_ROOT)], capture_output=True,
                              text=True, timeout=INSTALL_TIMEOUT_S, check=False,
                              env=commands.scrubbed_environment())
        built = sorted(build_into.glob("hpc_magics-*.whl"))
        if done.returncode != 0 or not built:
            pytest.fail(f"python -m build --wheel failed:\n{done.stdout[-3000:]}"
                        f"{done.stderr[-3000:]}", pytrace=False)
    return built[-1]


def _cache_folder() -> Path:
    """/var/tmp/hpc-magics-hub-envs-USER: the test user's, readable by the other user."""
    folder = Path("/var/tmp") / f"hpc-magics-hub-envs-{login_name()}"
    folder.mkdir(mode=0o755, exist_ok=True)
    if folder.is_symlink() or folder.stat().st_uid != os.getuid():
        pytest.fail(f"{folder} is not {login_name()}'s own folder: remove it", pytrace=False)
    return folder


@pytest.fixture(scope="session")
def hub_environment(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """docs/admin/install.md's steps: ``python3 -m venv ENV``, then ``ENV/bin/pip install
    jupyterhub batchspawner 'hpc_magics-VERSION-py3-none-any.whl[server]'``, from the
    index or, where WHEELHOUSE holds that wheel, with the guide's ``--no-index --find-links
    WHEELS`` (a hub host without the index); made once per wheel (its hash names the
    folder)."""
    wheel = _wheel(tmp_path_factory.mktemp("wheel"))
    offline = ["--no-index", "--find-links", str(WHEELHOUSE)] \
        if (WHEELHOUSE / wheel.name).exists() else []
    cache = _cache_folder()
    environment = cache / hashlib.sha256(wheel.read_bytes()).hexdigest()[:16]
    with open(cache / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run making the same one
        if (environment / "done").exists():
            return environment
        shutil.rmtree(environment, ignore_errors=True)  # a half-made one
        env = commands.scrubbed_environment()
        for argv in ([str(SYSTEM_PYTHON), "-m", "venv", str(environment)],
                     [str(environment / "bin" / "pip"), "install", *offline, "jupyterhub",
                      "batchspawner", f"{wheel}[server]"]):
            done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False,
                                  timeout=INSTALL_TIMEOUT_S)
            if done.returncode != 0:
                pytest.fail(f"{' '.join(argv)} failed:\n{done.stdout[-3000:]}"
                            f"{done.stderr[-3000:]}", pytrace=False)
        (environment / "done").write_text(wheel.name)
    return environment


# ------------------------------------------------------------ the hub
@dataclass(frozen=True)
class Hub:
    url: str  # the proxy's public address, ends without "/"
    token: str  # the test service's
    user: str  # the one user it spawns for
    home: Path  # that user's folder for the server (its job's working directory)
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


def _as_user(user: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """``argv`` as ``user``, through ``sudo -E -u`` as batchspawner runs its commands."""
    return subprocess.run(["sudo", "-n", "-E", "-u", user, "--", *argv], capture_output=True,
                          text=True, timeout=60, check=False,
                          env=commands.scrubbed_environment())


def _spawned_user() -> str:
    if os.geteuid() == 0:
        pytest.skip("the hub runs as a hub account and spawns through `sudo -E -u USER`: "
                    "run the suite as hpcuser1 (scripts/run-tests does)")
    probe = _as_user(SPAWNED_USER, "true")
    if probe.returncode != 0:
        pytest.skip(f"{login_name()} may not run `sudo -E -u {SPAWNED_USER}` without a "
                    f"password ({probe.stderr.strip()}): scripts/run-tests installs that rule")
    return SPAWNED_USER


@pytest.fixture
def hub(slurm_cluster: object, tmp_path: Path, hub_environment: Path) -> Iterator[Hub]:
    if os.environ.get("HPC_MAGICS_RELEASE"):
        pytest.skip("the hub test runs on the default test cluster only (its nodes are this "
                    "host); a --release cluster's nodes are hosts apart")
    if not PROXY.exists() or shutil.which("node") is None:
        pytest.skip(f"no configurable-http-proxy at {PROXY} (scripts/run-tests installs it "
                    "with npm as root)")
    user = _spawned_user()
    made = _as_user(user, "mktemp", "-d", "-p", pwd.getpwnam(user).pw_dir, "hub-test.XXXXXX")
    assert made.returncode == 0, made.stderr
    home = Path(made.stdout.strip())
    folder = tmp_path / "hub"
    folder.mkdir()
    port, token = port_to_hand_on(), secrets.token_hex(16)
    config = folder / "jupyterhub_config.py"
    config.write_text(TEST_CONFIG.format(
        example=str(EXAMPLE_CONFIG), port=port, hub_port=port_to_hand_on(),
        proxy_api_port=port_to_hand_on(), proxy=str(PROXY), folder=folder, user=user,
        token=token, home=home))
    env = commands.scrubbed_environment()
    env["PATH"] = f"{hub_environment / 'bin'}{os.pathsep}{env['PATH']}"
    with open(folder / "hub.log", "wb") as log:
        process = subprocess.Popen([str(hub_environment / "bin" / "jupyterhub"), "-f",
                                    str(config)], cwd=folder, env=env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    started = Hub(f"http://127.0.0.1:{port}", token, user, home, folder, process)
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
        _as_user(user, "rm", "-rf", str(home))


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


def _job_user(job_id: str) -> str:
    return commands.run(["squeue", "-h", "-j", job_id, "-o", "%u"], timeout=30).stdout.strip()


# ------------------------------------------------------------ the test
def test_a_user_of_the_hub_runs_the_doctor_and_a_cell_job(hub: Hub,
                                                          hub_environment: Path) -> None:
    user = hub.user
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
    assert _job_user(job_id) == user  # sbatch ran as the user, through sudo -E -u

    # the user's own token, through the hub's proxy, to the extension in the job
    token = hub.api("POST", f"users/{user}/tokens",
                    json={"scopes": [f"access:servers!user={user}"], "expires_in": 600})
    assert token.status_code == 201, token.text
    own = RunningServer(f"{hub.url}/user/{user}/", token.json()["token"], hub.home,
                        job_id=job_id)
    headers = {"Authorization": f"token {own.token}"}
    status = requests.get(f"{own.url}hpc-magics/server", timeout=HTTP_TIMEOUT_S,
                          headers=headers)
    assert status.status_code == 200, status.text
    assert status.json()["in_slurm_job"] is True
    assert status.json()["job_id"] == job_id
    assert status.json()["idle_stop_minutes"] == 120  # the example's args reach the server

    kernel = requests.post(f"{own.url}api/kernels", json={"name": "python3"},
                           timeout=HTTP_TIMEOUT_S, headers=headers)
    assert kernel.status_code == 201, kernel.text
    kernel_id = kernel.json()["id"]
    where = execute(own, kernel_id, "import sys, getpass; print(sys.prefix, getpass.getuser())")
    assert where.split() == [str(hub_environment), user]  # the guide's environment, the user

    output = execute(own, kernel_id, "%load_ext hpc_magics\n%hpc_doctor", timeout=240)
    printed = [line for line in output.splitlines() if line[:6].strip() in {"ok", "warn", "fail"}]
    assert [line.split(":", 1)[0][6:] for line in printed] == [t for t, _ in CHECKS], output
    assert all(line.startswith("ok    ") for line in printed), output

    cell = ("%%sbatch --wait\nimport socket\nanswer = 6 * 7\n"
            "print('answer', answer, 'from', socket.gethostname())")
    ran = execute(own, kernel_id, cell, timeout=240)
    assert "answer 42 from " in ran, ran
    assert execute(own, kernel_id, "print(answer)").strip() == "42"  # back in the notebook

    stop = hub.api("DELETE", f"users/{user}/server")
    assert stop.status_code in (202, 204), stop.text
    _wait("the hub has no server for the user", hub,
          lambda: not hub.api("GET", f"users/{user}").json().get("servers"))
    _wait(f"job {job_id} has left the queue", hub,
          lambda: _job_state(job_id) in ("", "COMPLETED", "CANCELLED", "FAILED"), 60)
