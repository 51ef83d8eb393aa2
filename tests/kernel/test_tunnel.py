"""``--tunnel ssh``: the kernel's ports forwarded through ``ssh NODE``, on the test cluster.

The nodes' sshd is an sshd of the test user on 127.0.0.1 (``sshd.py``); a profile's
``[kernel] ssh_options`` point ssh at an ssh_config naming the nodes, as a user's
``~/.ssh/config`` does on a real site.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from jupyter_client import BlockingKernelClient, KernelManager
from server.conftest import StartLocal, local_server, processes_mentioning  # noqa: F401

from hpc_magics.cli import main as cli_main
from hpc_magics.core.errors import InvalidRequest
from hpc_magics.core.resources import ResourceRequest
from hpc_magics.kernel import tunnel as tunnel_module
from hpc_magics.kernel.orphans import KERNELS_DIR_ENV, LeftBehind, describe
from hpc_magics.kernel.provisioner import StartFailed
from hpc_magics.kernel.spec import KernelRequest
from hpc_magics.kernel.tunnel import PORT_NAMES, free_local_ports
from hpc_magics.scheduler import commands

from .conftest import (
    GONE_WITHIN_S,
    Started,
    install,
    interrupts_and_lives_on,
    jobs_named_once_accounted,
    kernelspec_file,
    run_code,
    squeue_ids,
    start,
    wait_until_gone,
)
from .sockets import in_kernel_code, listening
from .sshd import Sshd, keygen, running_sshd, sshd_program

NODES = ("c1", "c2")  # scripts/slurm-cluster's node names
needs_sshd = pytest.mark.skipif(
    sshd_program() is None or shutil.which("ssh") is None,
    reason="no sshd or ssh on this host: apt-get install openssh-server (scripts/run-tests "
           "does, as root)")


@pytest.fixture
def sshd() -> Iterator[Sshd]:
    # a short private folder: ssh's control socket and sshd's paths stay short
    folder = Path(tempfile.mkdtemp(prefix="hm-sshd-"))
    try:
        with running_sshd(folder / "sshd", NODES) as running:
            yield running
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def output_flows_again(client: Any) -> float:
    """Seconds until a cell's printed output reaches the client again."""
    started = time.monotonic()
    while time.monotonic() - started < 30:
        try:
            printed, _ = run_code(client, "print('back')", timeout=5)
        except TimeoutError:  # the reply came, its output did not: not subscribed yet
            continue
        if printed.strip() == "back":
            break
    return time.monotonic() - started


def write_profile(folder: Path, monkeypatch: pytest.MonkeyPatch, name: str,
                  kernel_table: str) -> str:
    """A profile NAME: the lab's, with this ``[kernel]`` table; found first."""
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.toml").write_text(f'extends = "lab"\n\n[kernel]\n{kernel_table}\n')
    monkeypatch.setenv("HPC_MAGICS_PROFILE_PATH", str(folder))
    return name


def install_through_ssh(name: str, prefix: Path, sshd: Sshd, tmp_path: Path,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernel NAME, reached through the test nodes' sshd (a profile naming its config)."""
    profile = write_profile(tmp_path / "profiles", monkeypatch, "lab-ssh",
                            f'ssh_options = ["-F", "{sshd.ssh_config}"]')
    assert install(name, prefix, "--profile", profile, "--tunnel", "ssh", "-t", "10") == 0


@needs_sshd
@pytest.mark.slurm
def test_a_kernel_through_an_ssh_tunnel_runs_interrupts_and_closes_it(
        kernel_prefix: Path, started: Started, sshd: Sshd, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    install_through_ssh("lab-tunnel", kernel_prefix, sshd, tmp_path, monkeypatch)
    config = json.loads(kernelspec_file(kernel_prefix, "lab-tunnel").read_text())
    assert config["metadata"]["kernel_provisioner"]["config"]["tunnel"] == "ssh"

    manager, client = start("lab-tunnel", started)
    provisioner = manager.provisioner
    job_id = provisioner.job_id
    assert job_id and squeue_ids(job_id) == [job_id]
    tunnel = provisioner._tunnel
    assert tunnel is not None and tunnel.alive()
    assert tunnel.node in NODES  # reached by the node's Slurm name, as ssh_config names it

    printed, reply = run_code(client, "import os\nprint(os.environ['SLURM_JOB_ID'])")
    assert reply["status"] == "ok" and printed.split() == [job_id]

    # the client's connection file names 127.0.0.1 and the tunnel's ports, not the kernel's
    assert stat.S_IMODE(Path(manager.connection_file).stat().st_mode) == 0o600
    client_file = json.loads(Path(manager.connection_file).read_text())
    kernel_file = json.loads((provisioner.folder.path / "connection.json").read_text())
    names = sorted(tunnel.local)
    assert len(names) == 5
    assert client_file["ip"] == "127.0.0.1"
    assert {n: client_file[n] for n in names} == tunnel.local
    assert {n: kernel_file[n] for n in names} == dict(tunnel.ports)
    assert set(tunnel.local.values()).isdisjoint(tunnel.ports.values())
    # the tunnel's process listens on exactly those ports, on 127.0.0.1 only
    ssh_pid = tunnel.process.pid
    assert listening(str(ssh_pid)) == sorted(("127.0.0.1", p) for p in tunnel.local.values())
    # and the kernel on its node's address only (not all interfaces)
    printed, _ = run_code(client, in_kernel_code())
    assert {line.split()[0] for line in printed.splitlines()} == {kernel_file["ip"]}

    # the tunnel dies under the running kernel (the node's sshd restarted, the network
    # dropped): the next liveness check reopens it on the same ports, and the client,
    # which reconnects by itself, reaches the kernel again
    tunnel.process.kill()
    tunnel.process.wait(10)
    assert manager.is_alive()  # the restarter's check: the kernel's job still runs
    assert tunnel.alive() and tunnel.process.pid != ssh_pid
    assert listening(str(tunnel.process.pid)) == sorted(("127.0.0.1", p)
                                                        for p in tunnel.local.values())
    assert not Path(f"/proc/{ssh_pid}").exists()
    ssh_pid = tunnel.process.pid
    # the client's sockets reconnect by themselves; output published before iopub's
    # subscription is through again is lost (zmq's PUB/SUB): a cell or two may print unseen
    assert output_flows_again(client) < 30

    control = tunnel._folder
    assert control is not None and stat.S_IMODE(control.stat().st_mode) == 0o700

    interrupts_and_lives_on(manager, client)

    client.stop_channels()
    manager.shutdown_kernel()
    assert wait_until_gone(job_id) < GONE_WITHIN_S
    assert tunnel.process.poll() is not None  # ssh ended, and was waited for
    assert not control.exists()  # its private control folder too
    assert not Path(f"/proc/{ssh_pid}").exists()
    for port in tunnel.local.values():
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0  # nothing listens there now


@needs_sshd
@pytest.mark.slurm
def test_a_tunnel_that_cannot_open_fails_the_start_in_one_line_and_cancels_the_job(
        kernel_prefix: Path, started: Started, sshd: Sshd, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # the nodes' sshd does not know this key: ssh is refused, as on a site without keys set up
    stranger = tmp_path / "stranger"
    os.mkdir(stranger, 0o700)
    config = stranger / "ssh_config"
    config.write_text(sshd.ssh_config.read_text().replace(
        str(sshd.ssh_config.parent / "user_key"), str(stranger / "key")))
    keygen(stranger / "key")
    profile = write_profile(tmp_path / "profiles", monkeypatch, "lab-nokey",
                            f'tunnel = "ssh"\nssh_options = ["-F", "{config}"]')
    assert install("lab-nokey", kernel_prefix, "--profile", profile, "-t", "5") == 0
    since = time.time()
    manager = KernelManager(kernel_name="lab-nokey")
    started.append(manager)
    with pytest.raises(StartFailed) as failed:
        manager.start_kernel()
    message = str(failed.value)
    assert "\n" not in message
    assert "SSH tunnel to node c" in message and "Permission denied" in message, message
    job_id = manager.provisioner.job_id
    assert wait_until_gone(job_id) < GONE_WITHIN_S  # the job that ran the kernel: cancelled
    assert jobs_named_once_accounted("kernel-lab-nokey", since, job_id) == [job_id]


def test_the_tunnel_is_the_profiles_unless_asked_and_a_wrong_one_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "profiles"
    ssh_site = write_profile(folder, monkeypatch, "lab-ssh-site", 'tunnel = "ssh"')
    request = ResourceRequest(profile=ssh_site, backend="slurm")
    assert KernelRequest(request, "python3").connection_route() == "ssh"
    assert KernelRequest(request, "python3", tunnel="tcp").connection_route() == "tcp"
    lab = ResourceRequest(profile="lab", backend="slurm")
    assert KernelRequest(lab, "python3").connection_route() == "tcp"  # the common case
    assert KernelRequest(lab, "python3", tunnel="ssh").connection_route() == "ssh"

    with pytest.raises(InvalidRequest) as wrong:
        KernelRequest(lab, "python3", tunnel="vpn").check()
    assert str(wrong.value) == "--tunnel 'vpn' is not a tunnel: use tcp or ssh"
    write_profile(folder, monkeypatch, "lab-bad", 'tunnel = "ssh"\nssh_options = "-F x"')
    with pytest.raises(InvalidRequest) as bad:
        KernelRequest(ResourceRequest(profile="lab-bad", backend="slurm"), "python3").check()
    assert "ssh_options in profile 'lab-bad' must be a list of strings" in str(bad.value)
    assert "\n" not in str(bad.value)


@needs_sshd
def test_a_local_port_taken_before_ssh_binds_it_is_chosen_again(
        sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another program takes a chosen port between its choice and ssh's bind (a race a
    busy host loses now and then, made certain here: the first choice is a port this
    test holds). The tunnel opens on new ports, and they reach the node's."""
    with socket.socket() as taken, socket.socket() as kernel_port:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        kernel_port.bind(("127.0.0.1", 0))
        kernel_port.listen()
        chosen: list[list[int]] = []

        def first_one_taken(count: int) -> list[int]:
            ports = free_local_ports(count)
            if not chosen:
                ports[0] = taken.getsockname()[1]
            chosen.append(ports)
            return ports

        monkeypatch.setattr(tunnel_module, "free_local_ports", first_one_taken)
        tunnel = tunnel_module.SshTunnel(
            node="c1", remote="127.0.0.1", ports={"shell_port": kernel_port.getsockname()[1]},
            options=["-F", str(sshd.ssh_config)], log=tmp_path / "ssh.log")
        try:
            tunnel.open()
            assert len(chosen) == 2 and tunnel.local == {"shell_port": chosen[1][0]}
            assert "Address already in use" in (tmp_path / "ssh.log").read_text()
            with socket.create_connection(("127.0.0.1", tunnel.local["shell_port"]), 10):
                kernel_port.settimeout(10)
                kernel_port.accept()[0].close()  # the node's port was reached
        finally:
            tunnel.close()


@needs_sshd
@pytest.mark.slurm
def test_a_kernel_whose_server_is_gone_is_reached_again_through_a_new_tunnel(
        kernel_prefix: Path, started: Started, sshd: Sshd, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    install_through_ssh("lab-again", kernel_prefix, sshd, tmp_path, monkeypatch)
    manager, client = start("lab-again", started)
    provisioner = manager.provisioner
    job_id = provisioner.job_id
    client.stop_channels()
    # the server that held the tunnel was killed, and its tunnel went with it; the server
    # here is this test's process, so its tunnel is closed instead of the process killed
    provisioner._tunnel.close()

    again = subprocess.Popen(
        [sys.executable, "-m", "hpc_magics.cli", "kernel", "connect", job_id],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert again.stdout is not None
        said = again.stdout.readline()
        assert said.startswith(f"kernel job {job_id}: connect with `jupyter console "
                               "--existing "), (said, again.stderr.read() if again.poll()
                                                is not None and again.stderr else "")
        path = Path(said.split("--existing ", 1)[1].strip().rstrip("`"))
        assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds the kernel's key
        info = json.loads(path.read_text())
        assert info["ip"] == "127.0.0.1"
        assert "stays open until Ctrl-C" in again.stdout.readline()

        reached = BlockingKernelClient(connection_file=str(path))
        reached.load_connection_file()
        reached.start_channels()
        try:
            reached.wait_for_ready(timeout=30)
            printed, reply = run_code(reached, "import os\nprint(os.environ['SLURM_JOB_ID'])")
            assert reply["status"] == "ok" and printed.split() == [job_id]
        finally:
            reached.stop_channels()
        again.send_signal(signal.SIGINT)  # Ctrl-C: the tunnel closes, its file goes
        assert again.wait(30) == 0
        assert not path.exists()
        for port in (info[name] for name in PORT_NAMES):
            with socket.socket() as probe:
                assert probe.connect_ex(("127.0.0.1", port)) != 0
    finally:
        if again.poll() is None:
            again.kill()
            again.wait(10)
    manager.shutdown_kernel()
    assert wait_until_gone(job_id) < GONE_WITHIN_S


def test_connect_names_a_job_without_a_running_kernel_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))  # an empty index
    assert cli_main(["kernel", "connect", "4242"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("hpc-magics kernel: no running kernel of job 4242: see ")
    assert said.count("\n") == 1


def test_a_left_behind_kernel_with_a_tunnel_says_how_to_reach_it_again() -> None:
    entry = LeftBehind("77", "", "kernel-lab", Path("/nowhere"), False, tunnel=True)
    [_head, line] = describe([entry], "%hpc_cancel {job_id}").splitlines()
    assert line == ("  kernel job 77 (kernel-lab): cancel with %hpc_cancel 77, or its SSH "
                    "tunnel ended with the server; reconnect with hpc-magics kernel "
                    "connect 77")


@needs_sshd
@pytest.mark.slurm
@pytest.mark.timeout(240)
def test_a_restarted_server_says_which_kernel_jobs_its_killed_self_left_and_how_to_reach_them(
        kernel_prefix: Path, sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        local_server: StartLocal, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    # the servers' and this test's own kernels folder: the cleanup below sees only its own
    monkeypatch.setenv(KERNELS_DIR_ENV, str(tmp_path / "kernels"))
    install_through_ssh("lab-left", kernel_prefix, sshd, tmp_path, monkeypatch)
    first = local_server()
    started = requests.post(f"{first.url}api/kernels", json={"name": "lab-left"},
                            headers=first.headers(), timeout=180)
    assert started.status_code == 201, started.text
    job_id = next(line.split("job ", 1)[1].split()[0] for line in first.log.splitlines()
                  if "reached through ssh" in line)
    try:
        assert first.process is not None
        first.process.kill()  # kill -9: no shutdown, its kernel's job runs on
        first.process.wait(30)
        assert squeue_ids(job_id) == [job_id]

        second = local_server()
        said = f"its SSH tunnel ended with the server; reconnect with hpc-magics kernel " \
               f"connect {job_id}"
        deadline = time.monotonic() + 30
        while said not in second.log and time.monotonic() < deadline:
            time.sleep(0.5)
        assert said in second.log, second.log[-3000:]
        assert f"kernel job {job_id} (kernel-lab-left): cancel with hpc-magics kernel " \
               "cleanup" in second.log

        # the killed server's ssh outlived it (its own session); the cleanup ends it too
        assert processes_mentioning(str(sshd.ssh_config))
        assert cli_main(["kernel", "cleanup"]) == 0
        cleaned = capsys.readouterr().out
        assert f"closed the SSH tunnel its server left to kernel job {job_id}" in cleaned
        assert f"cancelled kernel job {job_id}" in cleaned
        deadline = time.monotonic() + 10
        while processes_mentioning(str(sshd.ssh_config)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_mentioning(str(sshd.ssh_config)) == []
        assert wait_until_gone(job_id) < GONE_WITHIN_S
    finally:
        commands.run(["scancel", job_id], timeout=30)
        for pid, _ in processes_mentioning(str(sshd.ssh_config)):  # the killed server's ssh
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
