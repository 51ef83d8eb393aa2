"""The checks of ``hpc-magics doctor`` and ``%hpc_doctor``, as data.

``CHECKS`` lists them in the order they print: a topic and a function that takes the
:class:`Setting` (the request, the jobs folder, whether a test job may run) and returns
``(status, line)``: ok, warn or fail, and one line saying what holds or what to fix. A check
that raises ``HpcMagicsError`` fails with its message. The jobs folder's sharing, the node's
Python and the kernel ports read the one test job (``probe.py``), run when first asked.
Warnings do not fail: what could not be checked here (no server running, ``--no-job``) is one.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from ..core.errors import HpcMagicsError
from ..core.kernel_world import login_only_root
from ..core.profiles import ClusterProfile, load_profile
from ..core.resources import ResourceRequest
from ..core.sites import profile_for_cluster
from ..core.users import user_name
from ..jobfolder.folder import SHARED_JOBS_ROOT, JobFolder, ensure_jobs_root
from ..jobfolder.lock import Lock
from ..scheduler import commands
from . import probe

OK, WARN, FAIL = "ok", "warn", "fail"
SLURM_COMMANDS = ("squeue", "sacct", "scancel", "sbatch")  # what a user's jobs need
EXTENSION = "hpc_magics"
LOCK_WAIT_S = 10.0
JOB_TIME_S = 60  # the test job's time limit: Slurm's smallest, it runs a second


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


@dataclass
class Setting:
    """What the checks look at: the request the user's jobs go with (profile, account,
    partition, qos, setup), the jobs folder, and whether the test job may run."""

    request: ResourceRequest
    profile_reason: str  # why this profile: "HPC_MAGICS_PROFILE=lab", "--profile", ...
    jobs_root: Path
    run_job: bool = True
    timeout_s: float = 120.0
    say: Callable[[str], None] = _stderr  # progress, apart from the findings
    _probe: probe.ProbeResult | None = field(default=None, repr=False)

    def profile(self) -> ClusterProfile:
        return load_profile(self.request.profile)

    def tunnel(self) -> str:
        from ..kernel.tunnel import choose

        return choose(None, self.profile())

    def probe(self) -> probe.ProbeResult:
        if self._probe is None:
            if not self.run_job:
                self._probe = probe.ProbeResult(problem="not checked (--no-job)")
            elif not commands.slurm_available():
                self._probe = probe.ProbeResult(problem="not checked: no sbatch here")
            else:
                try:
                    listen = self.tunnel() == "tcp"
                except HpcMagicsError:
                    listen = False  # the kernel ports' line says why
                request = ResourceRequest(
                    profile=self.request.profile, backend="slurm", time_s=JOB_TIME_S,
                    partition=self.request.partition, account=self.request.account,
                    qos=self.request.qos, setup=self.request.setup)
                self._probe = probe.run(request, self.profile(), self.jobs_root,
                                        listen=listen, timeout_s=self.timeout_s, say=self.say)
        return self._probe


Result = tuple[str, str]


# ------------------------------------------------------------------------- Slurm
def _no_slurm() -> bool:
    """No Slurm command at all here: no cluster to check, cells run on this machine."""
    return all(shutil.which(name) is None for name in (*SLURM_COMMANDS, "scontrol"))


def slurm_commands(s: Setting) -> Result:
    missing = [name for name in SLURM_COMMANDS if shutil.which(name) is None]
    if missing:
        here = ("cells run on this machine (the local backend); to submit to a cluster, "
                if _no_slurm() else "")
        return FAIL, (f"{', '.join(missing)} not found on PATH: {here}install Slurm's client "
                      "commands on this host, or put their folder on PATH (`module load slurm`)")
    from ..scheduler.submit import release

    folder = Path(shutil.which("sbatch") or "").parent
    return OK, f"{release()}; {', '.join(SLURM_COMMANDS)} in {folder}"


def controller(s: Setting) -> Result:
    from ..scheduler.cluster import cluster_name

    if _no_slurm():  # the Slurm commands line says it
        return WARN, "not checked: no Slurm here"
    answer = commands.run(["scontrol", "ping"], timeout=20)
    said = "; ".join(line.strip() for line in answer.stdout.splitlines() if line.strip())
    if answer.ok and " UP" in said and "DOWN" not in said:
        return OK, f"{said}; cluster {cluster_name()}"
    return FAIL, (f"the controller does not answer ({said or answer.first_error_line()}): "
                  "check that this host's slurm.conf (SLURM_CONF) names the cluster's "
                  "controller, or ask the site's support")


def profile(s: Setting) -> Result:
    from ..scheduler.cluster import cluster_name, is_foreign

    chosen = s.profile()  # an unknown or broken one fails with its fix
    said = f"{chosen.name} ({s.profile_reason})"
    if is_foreign(chosen.cluster_names):
        return WARN, (f"{said} describes {', '.join(chosen.cluster_names)}, not this cluster "
                      f"({cluster_name()}): requests are checked statically only; set "
                      "HPC_MAGICS_PROFILE to this cluster's profile")
    if chosen.name != "generic":
        return OK, said + (f", read from {chosen.source}" if chosen.source else "")
    here = cluster_name() if commands.slurm_available() else ""
    known = profile_for_cluster(here) if here else None
    if known:
        return WARN, (f"{said}, but profile {known} describes this cluster ({here}): "
                      f"set HPC_MAGICS_PROFILE={known}")
    if _no_slurm():  # no cluster here to add, nor to draft a profile from
        return WARN, f"{said}: requests are checked against no site's limits"
    return WARN, (f"{said}: requests are checked against no site's limits; an administrator "
                  "adds this cluster's profile to /etc/hpc_magics/profiles "
                  "(`hpc-magics profiles --draft` drafts one from this cluster)")


# -------------------------------------------------------------------- jobs folder
def jobs_folder(s: Setting) -> Result:
    root = s.jobs_root
    JobFolder.would_be(root, "doctor")  # a path sbatch cannot take fails with the fix
    made = ""
    if not root.exists():
        parent = root.parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not os.access(parent, os.W_OK | os.X_OK):
            return FAIL, (f"{root} does not exist and {parent} is not writable: set "
                          "HPC_MAGICS_JOBS_DIR to a folder of yours")
        if not s.run_job:
            return OK, f"{root} does not exist yet: the first job makes it (in {parent}, writable)"
        ensure_jobs_root(root)  # the test job needs it: made as the first job would make it
        made = " (made now, as your first job would)"
    try:
        handle, name = tempfile.mkstemp(prefix=".doctor-", dir=root)
        os.close(handle)
        os.unlink(name)
    except OSError as error:
        return FAIL, (f"cannot write in {root} ({error.strerror}): set HPC_MAGICS_JOBS_DIR "
                      "to a writable folder")
    return OK, f"{root} is writable{made}"


def jobs_folder_private(s: Setting) -> Result:
    root = s.jobs_root
    if not root.exists():
        return OK, ("the first job makes it private (0700), or shared with the group of a "
                    f"project folder it is in (mode {SHARED_JOBS_ROOT:04o})")
    info = root.stat()
    mode = stat.S_IMODE(info.st_mode)
    if mode & stat.S_IRWXO:
        return FAIL, (f"{root} has mode {mode:04o}: other users can look into your jobs: "
                      f"chmod o-rwx {root}")
    if mode & stat.S_IWGRP and not mode & stat.S_ISVTX:
        return WARN, (f"{root} has mode {mode:04o}: members of its group could remove your "
                      f"job folders: chmod {SHARED_JOBS_ROOT:04o} {root}")
    whose = "" if info.st_uid == os.getuid() else f"{user_name(info.st_uid)}'s, "
    if mode & stat.S_IRWXG:
        return OK, (f"{root} is {whose}shared with its group (mode {mode:04o}); each job "
                    "folder in it is private (0700)")
    return OK, f"{root} is private (mode {mode:04o})"


def jobs_folder_shared(s: Setting) -> Result:
    found = s.probe()
    if found.problem:
        return (FAIL if found.refused else WARN), found.problem
    if found.seen:
        return OK, (f"test job {found.job_id} on node {found.node} read a file written here "
                    f"and this host read its copy: {s.jobs_root} is shared with the nodes")
    under = login_only_root(str(s.jobs_root))
    where = f", it is under {under}, which each host has for itself" if under else ""
    return FAIL, (f"test job {found.job_id} ({found.state or 'state unknown'}) did not see "
                  f"{s.jobs_root} as this host does{where}: set HPC_MAGICS_JOBS_DIR to a "
                  "folder in your home or project space, which the nodes share")


def jobs_folder_lock(s: Setting) -> Result:
    root = s.jobs_root
    if not root.is_dir():
        return WARN, f"not checked: {root} does not exist yet"
    handle, name = tempfile.mkstemp(prefix=".doctor-", suffix=".lock", dir=root)
    os.close(handle)
    lock = Lock(Path(name))
    try:
        if not lock.acquire(timeout=LOCK_WAIT_S):
            return FAIL, f"no lock could be taken in {root} within {LOCK_WAIT_S:.0f} s"
        mode = lock.mode
        lock.release()
    except OSError as error:
        return FAIL, (f"locking in {root} fails ({error.strerror}): set HPC_MAGICS_JOBS_DIR "
                      "to a folder elsewhere")
    finally:
        lock.release()
        Path(name).unlink(missing_ok=True)
    if mode == "flock":
        return OK, f"{root} locks with flock"
    return OK, (f"{root} refuses flock (Lustre -o noflock, some NFS): hpc_magics locks with "
                "lock files there instead, as documented")


# ------------------------------------------------------------------- node Python
def node_python(s: Setting) -> Result:
    try:
        here = metadata.version("hpc_magics")
    except metadata.PackageNotFoundError:
        here = "unknown"
    found = s.probe()
    if found.problem:
        return WARN, found.skipped
    answer = found.answer
    if answer is None:
        if not found.seen:
            return WARN, "not checked: the test job's files did not reach this host"
        return FAIL, (f"the job's Python did not start hpc_magics on node {found.node} "
                      f"({found.error_line or found.state}): install hpc_magics (version "
                      f"{here}) where the nodes see it, or set "
                      "HPC_MAGICS_PYTHON to a Python that has it")
    python = f"{answer.get('python')} (Python {answer.get('python_version')})"
    errors = dict(answer.get("import_errors") or {})
    if errors:
        name, why = next(iter(errors.items()))
        return FAIL, (f"{python} on node {found.node} cannot import {name} ({why}): install "
                      f"hpc_magics {here} with its dependencies there")
    versions = dict(answer.get("versions") or {})
    imports = ", ".join(f"{name} {version}" for name, version in versions.items())
    there = versions.get("hpc_magics")
    if there != here:
        return WARN, (f"{python} on node {found.node} has hpc_magics {there}, this host "
                      f"{here}: install the same version in both")
    return OK, f"{python} on node {found.node} imports {imports}"


# ------------------------------------------------------------ the Jupyter server
def server_extension(s: Setting) -> Result:
    try:
        from jupyter_server.serverapp import ServerApp
    except ImportError:
        return WARN, (f"jupyter_server is not installed for {sys.executable}: run "
                      "`hpc-magics doctor` in the Jupyter server's environment to check it")
    # as the server decides: its config files (a user's jupyter_server_config.json can turn
    # off what a conf.d file of the environment or the system turns on), then conf.d
    app = ServerApp()
    app.load_config_file()
    app.find_server_extensions()
    if app.jpserver_extensions.get(EXTENSION):
        return OK, f"{EXTENSION} is enabled in jupyter_server's configuration"
    return FAIL, (f"{EXTENSION} is not enabled in jupyter_server's configuration: "
                  f"`jupyter server extension enable {EXTENSION}` (--sys-prefix for this "
                  "environment, --system for every user of a hub), then restart the server")


def server_reachable(s: Setting) -> Result:
    from jupyter_core.paths import jupyter_runtime_dir

    from ..server.client import ServerConnection, find_own_server, running_servers

    servers = running_servers()
    own = find_own_server(servers)
    if not servers:
        return WARN, (f"no running Jupyter server of yours in {jupyter_runtime_dir()}: "
                      "checked while one runs (%hpc_doctor in a notebook, or this command "
                      "in JupyterLab's terminal)")
    failed = ""
    for info in [own] if own else servers:
        connection = ServerConnection.from_info(info)
        try:
            connection.request("GET", "hpc-magics/server")
        except HpcMagicsError as error:
            failed = failed or str(error)
            continue
        mine = " (it runs this kernel)" if own else ""
        return OK, f"the Jupyter server at {connection.url}{mine} answers /hpc-magics/server"
    return FAIL, (f"{failed}: the extension is not loaded in that server; enable it (the "
                  "line above) and restart the server")


def kernel_ports(s: Setting) -> Result:
    from ..kernel.tunnel import CONNECT_TIMEOUT_S, ssh_options

    route = s.tunnel()  # a wrong [kernel] tunnel fails with its fix
    found = s.probe()
    if found.problem:
        return WARN, f"tunnel {route}: {found.skipped}"
    if found.answer is None:  # for ssh: which node to try, for tcp: the port opened there
        return WARN, f"tunnel {route}: not checked: the test job's Python gave no answer"
    if route == "ssh":
        answer = commands.run(["ssh", "-o", "BatchMode=yes", "-o",
                               f"ConnectTimeout={CONNECT_TIMEOUT_S}",
                               *ssh_options(s.profile()), "--", found.node, "true"],
                              timeout=CONNECT_TIMEOUT_S + 15)
        if answer.ok:
            return OK, f"tunnel ssh: `ssh {found.node}` works from this host, with no password"
        return FAIL, (f"tunnel ssh: `ssh {found.node}` fails from this host "
                      f"({answer.first_error_line()}): give it a key for the nodes "
                      "(~/.ssh/config, known_hosts), or use tunnel tcp where their ports are open")
    if found.reached is None:
        return FAIL, f"tunnel tcp: {found.answer.get('address_error') or 'no port was opened'}"
    if found.reached == "":
        return OK, (f"tunnel tcp: this host reached a port the test job opened on node "
                    f"{found.node}, where a Slurm kernel listens")
    return FAIL, (f"tunnel tcp: this host cannot reach a port opened on node {found.node} "
                  f"({found.reached}): set [kernel] tunnel = \"ssh\" in the profile (or "
                  "`hpc-magics kernel install --tunnel ssh`), or ask the site to open the "
                  "nodes' ports to this host")


CHECKS: tuple[tuple[str, Callable[[Setting], Result]], ...] = (
    ("Slurm commands", slurm_commands),
    ("controller", controller),
    ("profile", profile),
    ("jobs folder", jobs_folder),
    ("jobs folder privacy", jobs_folder_private),
    ("jobs folder on the nodes", jobs_folder_shared),
    ("jobs folder locking", jobs_folder_lock),
    ("Python on a node", node_python),
    ("server extension", server_extension),
    ("Jupyter server", server_reachable),
    ("kernel ports", kernel_ports),
)
