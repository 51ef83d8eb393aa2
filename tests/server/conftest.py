"""Real jupyter_server processes with the hpc_magics extension: local, or inside a Slurm job.

The extension is enabled the way an installed wheel enables it: the repository's
``jupyter-config/server-config/hpc_magics.json`` is copied into a private
``JUPYTER_CONFIG_DIR/jupyter_server_config.d``. Each server gets its own runtime dir, so
the squeue cache file is private to the test.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from hpc_magics.scheduler import commands

REPO_ROOT = Path(__file__).resolve().parents[2]
SERVER_CONFIG = REPO_ROOT / "jupyter-config" / "server-config" / "hpc_magics.json"
JUPYTER = Path(sys.executable).parent / "jupyter"
START_TIMEOUT_S = 60.0
HTTP_TIMEOUT_S = 30.0


def port_to_hand_on() -> int:
    """A free port for a program to bind (JupyterHub, its proxy, sshd, run-lab, a Jupyter
    server): one below the kernel's ephemeral range, which no other process gets by binding
    port 0 or connecting, as a port picked by binding 0 here could be before the program
    binds it. A margin below the range: a Jupyter server that finds it taken tries ports
    near it."""
    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(200):
        port = random.randrange(20000, min(ephemeral_low, 32768) - 200)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken: another test's
            return port
    raise RuntimeError("no free port below the ephemeral range")


def server_info_in(runtime_dir: Path) -> Callable[[], str]:
    """What the server of ``runtime_dir`` wrote of itself (``jpserver-PID.json``), or ""."""
    def read() -> str:
        try:
            return "".join(info.read_text() for info in runtime_dir.glob("jpserver-*.json"))
        except OSError:
            return ""
    return read


def port_from_runtime(server_info: Callable[[], str], alive: Callable[[], bool],
                      describe: Callable[[], str], timeout: float = START_TIMEOUT_S) -> int:
    """The port a server took (server_port_option), from the ``jpserver-PID.json`` it
    writes as it starts (``server_info``: see server_info_in); whether it answers there is
    wait_until_answering's."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return int(json.loads(server_info())["port"])
        except (ValueError, KeyError):
            pass  # not there, or not all written yet
        if not alive():
            pytest.fail(f"the jupyter server ended before listening:\n{describe()}",
                        pytrace=False)
        time.sleep(0.2)
    pytest.fail(f"the jupyter server did not listen within {timeout:.0f}s:\n{describe()}",
                pytrace=False)


@dataclass(frozen=True)
class RunningServer:
    url: str  # ends with "/"
    token: str
    folder: Path  # holds root/, runtime/, config/, server.log
    process: subprocess.Popen[bytes] | None = None  # None when Slurm runs it
    job_id: str | None = None

    @property
    def job(self) -> str:
        """The Slurm job id of a server started by ``server_in_job``."""
        assert self.job_id is not None, "this server does not run in a Slurm job"
        return self.job_id

    @property
    def command_mark(self) -> str:
        """What names this server's process on its command line (its token is not there)."""
        return root_dir_option(self.folder)

    @property
    def runtime_dir(self) -> Path:
        return self.folder / "runtime"

    @property
    def times_from_slurm(self) -> tuple[float, float] | None:
        """``SLURM_JOB_START_TIME`` and ``SLURM_JOB_END_TIME`` as the job saw them: None on
        releases that set none (22.05 sets neither; 24.11 sets both)."""
        start, _, end = (self.folder / "slurm_job_times").read_text().strip().partition(" ")
        return (float(start), float(end)) if start and end else None

    @property
    def log(self) -> str:
        path = self.folder / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def get(self, path: str, **kwargs: object) -> requests.Response:
        return requests.get(self.url + path, headers=self.headers(), timeout=HTTP_TIMEOUT_S,
                            **kwargs)  # type: ignore[arg-type]

    def post(self, path: str, **kwargs: object) -> requests.Response:
        return requests.post(self.url + path, headers=self.headers(), timeout=HTTP_TIMEOUT_S,
                             **kwargs)  # type: ignore[arg-type]

    def answers(self) -> bool:
        try:
            return requests.get(self.url + "api", timeout=2).ok
        except requests.RequestException:
            return False


def prepare_folder(folder: Path) -> None:
    for sub in ("root", "runtime", "config/jupyter_server_config.d"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    shutil.copy(SERVER_CONFIG, folder / "config" / "jupyter_server_config.d")


# On a --release cluster (scripts/slurm-cluster exec sets HPC_MAGICS_RELEASE) the job's node
# is another host: the server listens on that node's own address, the test reaches it by name.
HOSTS_APART = bool(os.environ.get("HPC_MAGICS_RELEASE"))
NODE_ADDRESS = "$(getent hosts \"$(hostname)\" | awk '{print $1; exit}')"


def root_dir_option(folder: Path) -> str:
    return f"--ServerApp.root_dir={folder / 'root'}"


def server_port_option() -> str:
    """Never ``--port=0``: jupyter_server 2 then binds a free port, closes it, writes it in
    its runtime file and binds it again later, and a kernel binding port 0 in between takes
    it (95f05b6's clean-clone run: the lab's port answered with ZeroMQ's greeting, and the
    lab could not listen). A port below the ephemeral range is no kernel's; a taken one
    makes the server try others near it, and port_from_runtime reads the one it took."""
    return f"--port={port_to_hand_on()}"


def server_argv(folder: Path, extra: Sequence[str], ip: str = "127.0.0.1") -> list[str]:
    return [str(JUPYTER), "server", "--no-browser", "--allow-root", f"--ip={ip}",
            server_port_option(), root_dir_option(folder), *extra]


def server_environment(folder: Path, token: str, path_prefix: Path | None = None
                       ) -> dict[str, str]:
    """The server's environment; its token too (a command line is readable by all)."""
    env = commands.scrubbed_environment()
    env["JUPYTER_TOKEN"] = token
    env["JUPYTER_RUNTIME_DIR"] = str(folder / "runtime")
    env["JUPYTER_CONFIG_DIR"] = str(folder / "config")
    env["JUPYTER_PLATFORM_DIRS"] = "0"
    if path_prefix is not None:
        env["PATH"] = f"{path_prefix}:{env['PATH']}"
    return env


def wait_until_answering(server: RunningServer, alive: Callable[[], bool]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while not server.answers():
        if not alive() or time.monotonic() > deadline:
            pytest.fail(f"jupyter server at {server.url} did not start:\n{server.log[-3000:]}",
                        pytrace=False)
        time.sleep(0.2)


def processes_mentioning(text: str) -> list[tuple[int, str]]:
    """Live (not zombie) processes whose command line contains ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append((int(entry.name), cmdline.strip()))
    return found


StartLocal = Callable[..., RunningServer]


@pytest.fixture
def local_server(tmp_path: Path) -> Iterator[StartLocal]:
    """Start ``jupyter server`` as a subprocess on 127.0.0.1 (not in a Slurm job).

    ``start(*extra_args, config_py="", path_prefix=None, again=None)``: ``config_py``
    becomes the server's ``jupyter_server_config.py``; ``path_prefix`` goes in front of its
    PATH; ``again``: a stopped server, started again on its folder (root, runtime, log).
    """
    started: list[subprocess.Popen[bytes]] = []

    def start(*extra: str, config_py: str = "", path_prefix: Path | None = None,
              again: RunningServer | None = None) -> RunningServer:
        folder = again.folder if again is not None else tmp_path / f"server{len(started)}"
        prepare_folder(folder)
        if config_py:
            (folder / "config" / "jupyter_server_config.py").write_text(config_py)
        token = secrets.token_hex(16)
        with open(folder / "server.log", "ab") as log:
            process = subprocess.Popen(
                server_argv(folder, extra), stdout=log, stderr=subprocess.STDOUT,
                env=server_environment(folder, token, path_prefix), start_new_session=True,
                cwd=folder,
            )
        started.append(process)
        port = port_from_runtime(server_info_in(folder / "runtime"), lambda: process.poll() is None,
                                 lambda: (folder / "server.log").read_text(errors="replace"))
        server = RunningServer(f"http://127.0.0.1:{port}/", token, folder, process)
        wait_until_answering(server, lambda: process.poll() is None)
        return server

    yield start
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)


# ---------------------------------------------------------------- servers inside Slurm jobs

SERVER_JOB_MINUTES = 5


def sbatch(script: Path) -> str:
    answer = commands.run(["sbatch", "--parsable", str(script)], timeout=30)
    assert answer.ok, answer.first_error_line()
    return answer.stdout.strip().split(";")[0]


def squeue_state(job_id: str) -> str:
    answer = commands.run(["squeue", "-h", "-j", job_id, "-o", "%T"], timeout=30)
    return answer.stdout.strip() if answer.ok else ""


def wait_running(job_id: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while squeue_state(job_id) != "RUNNING":
        assert time.monotonic() < deadline, f"job {job_id} did not start running"
        time.sleep(0.2)


StartInJob = Callable[..., RunningServer]


@pytest.fixture
def server_in_job(slurm_cluster: object, tmp_path: Path) -> Iterator[StartInJob]:
    """sbatch a job that runs ``jupyter server`` on a test node (127.0.0.1, known port/token).

    ``start(*extra_args, path_prefix=None)``: ``path_prefix`` goes in front of PATH inside
    the job (for the squeue-counting shim).
    """
    job_ids: list[str] = []

    def start(*extra: str, path_prefix: Path | None = None) -> RunningServer:
        folder = tmp_path / f"job{len(job_ids)}"
        prepare_folder(folder)
        token = secrets.token_hex(16)
        env = server_environment(folder, token, path_prefix)
        exports = "\n".join(f"export {k}={shlex.quote(env[k])}" for k in
                            ("PATH", "JUPYTER_RUNTIME_DIR", "JUPYTER_CONFIG_DIR",
                             "JUPYTER_PLATFORM_DIRS", "JUPYTER_TOKEN"))
        argv = " ".join(shlex.quote(a) for a in server_argv(folder, extra))
        if HOSTS_APART:  # the node's address, found by the job's shell on its node
            argv = argv.replace("--ip=127.0.0.1", f'"--ip={NODE_ADDRESS}" '
                                "--ServerApp.allow_remote_access=True", 1)
        script = folder / "server.sbatch"
        script.write_text(
            "#!/bin/bash\n"
            f"#SBATCH --job-name=hpc-magics-test-server\n#SBATCH --time={SERVER_JOB_MINUTES}\n"
            f"#SBATCH --output={folder / 'server.log'}\n#SBATCH --chdir={folder}\n"
            # what this Slurm release tells a job of its times (24.11 does; 22.05 does not)
            "printf '%s %s' \"${SLURM_JOB_START_TIME:-}\" \"${SLURM_JOB_END_TIME:-}\" > "
            f"{folder / 'slurm_job_times'}\n"
            f"{exports}\nexec {argv}\n"
        )
        job_id = sbatch(script)
        job_ids.append(job_id)
        host = "127.0.0.1"
        if HOSTS_APART:
            wait_running(job_id)
            host = commands.run(["squeue", "-h", "-j", job_id, "-o", "%N"],
                                timeout=30).stdout.strip()
        log = folder / "server.log"
        port = port_from_runtime(
            server_info_in(folder / "runtime"),
            lambda: squeue_state(job_id) in {"PENDING", "RUNNING"},
            lambda: f"job {job_id}:\n" + (log.read_text(errors="replace")[-3000:]
                                          if log.exists() else "(no log)"))
        server = RunningServer(f"http://{host}:{port}/", token, folder, job_id=job_id)
        wait_until_answering(server, lambda: squeue_state(job_id) in {"PENDING", "RUNNING"})
        return server

    yield start
    for job_id in job_ids:
        commands.run(["scancel", job_id], timeout=30)


def execute(server: RunningServer, kernel_id: str, code: str, timeout: float = 60.0,
            cell_id: str | None = None) -> str:
    """Run ``code`` in one of the server's kernels over its websocket; return its output.

    Output is stdout/stderr text plus error tracebacks, up to the kernel's idle status.
    ``cell_id``: sent as JupyterLab sends a notebook cell's id.
    """
    import json
    import uuid

    import websocket

    session, msg_id = uuid.uuid4().hex, uuid.uuid4().hex
    url = server.url.replace("http://", "ws://") + f"api/kernels/{kernel_id}/channels"
    connection = websocket.create_connection(f"{url}?session_id={session}", timeout=timeout,
                                             header=[f"Authorization: token {server.token}"])
    try:
        connection.send(json.dumps({
            "header": {"msg_id": msg_id, "username": "test", "session": session,
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {"cellId": cell_id} if cell_id else {},
            "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
        }))
        output: list[str] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                frame = connection.recv()
            except websocket.WebSocketConnectionClosedException:
                break  # the kernel went away (a stop does that)
            if isinstance(frame, bytes):
                continue  # a message with binary buffers (a widget's image): not ours to read
            message = json.loads(frame)
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                output.append(content["text"])
            elif kind == "error":
                output.append("\n".join(content["traceback"]))
            elif kind == "status" and content["execution_state"] == "idle":
                break
        return "".join(output)
    finally:
        connection.close()
