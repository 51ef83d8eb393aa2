"""End-of-job events and the job list of a real jupyter_server, with real jobs ending on the
test cluster: submitted from one of the server's kernels (%%sbatch) and from a terminal."""

from __future__ import annotations

import concurrent.futures
import itertools
import time
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.core.users import login_name
from hpc_magics.scheduler import commands
from hpc_magics.scheduler.cluster import cluster_name

from .conftest import RunningServer, StartLocal, execute

pytestmark = pytest.mark.timeout(240)

FAST = ("--HpcMagicsServer.events_interval_s=2", "--HpcMagicsServer.jobs_poll_interval_s=2")
EVENT_TIMEOUT_S = 150.0


def wait_for_event(server: RunningServer, since: int, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + EVENT_TIMEOUT_S
    while time.monotonic() < deadline:
        answer = server.get(f"hpc-magics/jobs/events?since={since}")
        assert answer.status_code == 200, answer.text
        for event in answer.json()["events"]:
            if event["job_id"] == job_id:
                return dict(event)
        time.sleep(1)
    jobs = server.get("hpc-magics/jobs").json()
    pytest.fail(f"no end event for job {job_id} in {EVENT_TIMEOUT_S:.0f} s; jobs: {jobs}",
                pytrace=False)


def listed(server: RunningServer) -> dict[str, dict[str, Any]]:
    answer = server.get("hpc-magics/jobs")
    assert answer.status_code == 200, answer.text
    return {job["job_id"]: job for job in answer.json()["jobs"]}


def submit_from_kernel(server: RunningServer, kernel_id: str, name: str, cell: str) -> str:
    output = execute(server, kernel_id, f"%%sbatch --name {name}\n{cell}", timeout=90)
    job_id = execute(server, kernel_id, "print(hpc_magics.job().job_id)").strip()
    assert job_id.isdigit(), f"no job id; the cell said:\n{output}\n{job_id}"
    return job_id


@pytest.mark.slow
def test_jobs_of_the_servers_kernels_end_as_events_with_their_folder(
        local_server: StartLocal, slurm_cluster: Any, sacct_state: Any) -> None:
    server = local_server(*FAST)
    start = server.get("hpc-magics/jobs/events").json()
    assert start["events"] == [], "without since= only the position is returned"
    since = start["last"]
    # a notebook's session: its kernel runs in the server's root, as in JupyterLab
    session = server.post("api/sessions", json={"path": "notify.ipynb", "type": "notebook",
                                                "kernel": {"name": "python3"}})
    assert session.status_code == 201, session.text
    kernel = session.json()["kernel"]["id"]
    said = execute(server, kernel, "%load_ext hpc_magics\nimport hpc_magics, os\n"
                                   "%hpc_resources --profile lab --backend slurm -t 5\n"
                                   "print(os.environ['HPC_MAGICS_SERVER_ID'])")
    server_id = server.get("hpc-magics/jobs").json()["server_id"]
    assert server_id in said, f"the kernel does not carry the server's id:\n{said}"

    ok = submit_from_kernel(server, kernel, "notify-ok", "import time\ntime.sleep(6)\nx = 1")
    failing = submit_from_kernel(server, kernel, "notify-fail", "import time\ntime.sleep(3)\n"
                                                                "1 / 0")
    row = listed(server).get(ok)
    assert row is not None, f"job {ok} is not in the server's list"
    assert row["from_this_server"] is True and row["final"] is False
    assert row["folder"].startswith("hpc_jobs/notify-ok-"), row["folder"]
    assert row["name"] == "notify-ok"

    event = wait_for_event(server, since, ok)
    assert event["state"] == "COMPLETED" and event["phase"] == "done"
    assert event["name"] == "notify-ok" and event["from_this_server"] is True
    assert event["folder"] == row["folder"]
    assert (server.folder / "root" / event["folder"] / "job.sh").is_file()
    # the list shows the same end at the same moment
    assert listed(server)[ok]["state"] == "COMPLETED"
    assert sacct_state(ok) == "COMPLETED"

    failed = wait_for_event(server, since, failing)
    assert failed["state"] == sacct_state(failing) == "FAILED"
    assert failed["phase"] == "failed"
    # each end is told once, in order
    events = server.get(f"hpc-magics/jobs/events?since={since}").json()["events"]
    assert [e["job_id"] for e in events].count(ok) == 1
    assert [e["seq"] for e in events] == sorted({e["seq"] for e in events})
    after = server.get(f"hpc-magics/jobs/events?since={events[-1]['seq']}").json()
    assert after["events"] == [] and after["last"] == events[-1]["seq"]


def terminal_job_event(server: RunningServer, name: str) -> dict[str, Any]:
    """Submit a short job from a terminal (sbatch); the server lists it, then its end event."""
    since = server.get("hpc-magics/jobs/events").json()["last"]
    submitted = commands.run(["sbatch", "--parsable", "-J", name, "-t", "2",
                              "-o", "/dev/null", "--chdir=/tmp", "--wrap", "sleep 8"],
                             timeout=30)
    assert submitted.ok, submitted.first_error_line()
    job_id = submitted.stdout.strip().split(";")[0]
    try:
        deadline = time.monotonic() + 60
        while job_id not in listed(server):
            assert time.monotonic() < deadline, f"job {job_id} never listed"
            time.sleep(1)
        return wait_for_event(server, since, job_id)
    finally:
        commands.run(["scancel", job_id], timeout=30)


@pytest.mark.slow
def test_a_terminal_sbatch_job_ends_as_an_event_too(local_server: StartLocal,
                                                    slurm_cluster: Any) -> None:
    server = local_server(*FAST)
    event = terminal_job_event(server, "notify-terminal")
    assert event["state"] == "COMPLETED" and event["name"] == "notify-terminal"
    assert event["folder"] is None and event["from_this_server"] is False


@pytest.mark.slow
def test_caches_that_cannot_be_written_do_not_stop_the_servers_refresh(
        local_server: StartLocal, slurm_cluster: Any, tmp_path: Path) -> None:
    """A failed write of the user's shared caches once ended the server's refresh thread
    for good. Here a folder takes each cache file's place (every write fails, as on a full
    or read-only runtime dir): the job list and the end events still come."""
    runtime = tmp_path / "server0" / "runtime"  # the first server's (conftest's layout)
    blocked = [runtime / f"hpc_magics-{kind}-{login_name()}-{cluster_name()}.json"
               for kind in ("squeue", "sacct")]
    for place in blocked:
        place.mkdir(parents=True)
    server = local_server(*FAST)
    event = terminal_job_event(server, "unwritable-cache")
    assert event["state"] == "COMPLETED" and event["name"] == "unwritable-cache"
    # the server's caches are the blocked ones: it wrote no other, and could not write these
    assert sorted(runtime.glob("hpc_magics-s*.json")) == sorted(blocked)
    assert all(place.is_dir() and not any(place.iterdir()) for place in blocked)
    assert "looking at jobs failed" not in server.log


def test_events_refuse_a_since_that_is_not_a_number(local_server: StartLocal) -> None:
    server = local_server()
    answer = server.get("hpc-magics/jobs/events?since=soon")
    assert answer.status_code == 400
    assert "soon" in answer.json()["message"]


COUNTING_SHIM = """#!/bin/sh
# Logs the time of each call (for the per-interval bound), then runs the real command.
echo "$(date +%s.%N) $*" >> {log}
exec {real} "$@"
"""


def counting_shims(folder: Path) -> tuple[Path, dict[str, Path]]:
    shims, logs = folder / "shims", {}
    shims.mkdir()
    for command in ("squeue", "sacct"):
        real = commands.run(["sh", "-c", f"command -v {command}"], timeout=10).stdout.strip()
        logs[command] = folder / f"{command}.log"
        shim = shims / command
        shim.write_text(COUNTING_SHIM.format(log=logs[command], real=real))
        shim.chmod(0o755)
    return shims, logs


def call_times(log: Path, must_contain: str = "") -> list[float]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [float(line.split()[0]) for line in lines if must_contain in line]


@pytest.mark.slow
def test_many_tabs_and_ending_jobs_cost_one_squeue_and_one_sacct_per_interval(
        local_server: StartLocal, slurm_cluster: Any, tmp_path: Path) -> None:
    interval = 3.0
    shims, logs = counting_shims(tmp_path)
    server = local_server("--HpcMagicsServer.events_interval_s=2",
                          f"--HpcMagicsServer.jobs_poll_interval_s={interval}", path_prefix=shims)
    since = server.get("hpc-magics/jobs/events").json()["last"]
    jobs = []
    for seconds in (3, 5, 7):
        submitted = commands.run(["sbatch", "--parsable", "-J", f"notify-count-{seconds}",
                                  "-t", "2", "-o", "/dev/null", "--chdir=/tmp", "--wrap",
                                  f"sleep {seconds}"], timeout=30)
        assert submitted.ok, submitted.first_error_line()
        jobs.append(submitted.stdout.strip().split(";")[0])
    ended: dict[str, str] = {}

    def tab() -> None:  # what an open JupyterLab tab does, much faster than it does it
        nonlocal since
        server.get("hpc-magics/jobs")
        for event in server.get(f"hpc-magics/jobs/events?since={since}").json()["events"]:
            ended[event["job_id"]] = event["state"]

    try:
        deadline = time.monotonic() + 120  # a busy CI cluster may queue them a while
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as tabs:
            while not set(jobs) <= set(ended) and time.monotonic() < deadline:
                list(tabs.map(lambda _: tab(), range(8)))
                time.sleep(0.3)
    finally:
        for job_id in jobs:
            commands.run(["scancel", job_id], timeout=30)
    # counting is the point here; a slurmdbd lagging under CI load may let two queue views
    # settle a job as ENDED before accounting says COMPLETED (test_rest checks states)
    states = {job_id: ended.get(job_id) for job_id in jobs}
    assert all(state in ("COMPLETED", "ENDED") for state in states.values()), states
    for command, must_contain in (("squeue", " -u "), ("sacct", "")):
        times = call_times(logs[command], must_contain)
        assert times, f"no {command} call at all"
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        assert all(gap >= interval - 0.2 for gap in gaps), \
            f"{command} more often than once per {interval} s: gaps {gaps}"


@pytest.mark.slow
def test_a_job_that_starts_and_ends_between_two_queue_views_is_announced(
        local_server: StartLocal, slurm_cluster: Any, tmp_path: Path) -> None:
    """A job that squeue never listed live (submitted and over between two of the server's
    looks at the queue) was never announced: only jobs once seen in the queue were tracked.
    Ordering, not timing: the squeue log shows no call from sbatch until its job ended
    (``sbatch --wait``); when a busy cluster lets one fall in between, the job is tried again."""
    shims, logs = counting_shims(tmp_path)
    server = local_server("--HpcMagicsServer.events_interval_s=2",
                          "--HpcMagicsServer.jobs_poll_interval_s=30", path_prefix=shims)
    since = server.get("hpc-magics/jobs/events").json()["last"]
    deadline = time.monotonic() + 60
    while not call_times(logs["squeue"], " -u "):  # the server's first look at the queue
        assert time.monotonic() < deadline, "the server never asked squeue"
        time.sleep(0.5)
    time.sleep(1)  # that squeue has answered: it described the queue before our sbatch
    unseen = None
    for attempt in range(3):
        looks = len(call_times(logs["squeue"], " -u "))
        submitted = commands.run(["sbatch", "--parsable", "--wait", "-J", f"unseen-{attempt}",
                                  "-t", "2", "-o", "/dev/null", "--chdir=/tmp", "--wrap",
                                  "sleep 1"], timeout=120)
        assert submitted.ok, submitted.first_error_line()
        if len(call_times(logs["squeue"], " -u ")) == looks:
            unseen = submitted.stdout.strip().split(";")[0]
            break
    assert unseen is not None, "every try was listed by a squeue while it ran"
    event = wait_for_event(server, since, unseen)
    assert event["state"] in ("COMPLETED", "ENDED"), event
    assert event["from_this_server"] is False


OUTAGE_SHIM = """#!/bin/sh
# A controller outage on demand (the shared test cluster's daemons must stay up): while
# {flag} exists this fails as squeue/sacct do when slurmctld/slurmdbd are unreachable.
if [ -e {flag} ]; then
  echo "slurm_load_jobs error: Unable to contact slurm controller (connect failure)" >&2
  exit 1
fi
exec {real} "$@"
"""


@pytest.mark.slow
def test_an_outage_is_never_taken_for_the_end_of_a_job(local_server: StartLocal,
                                                       slurm_cluster: Any,
                                                       tmp_path: Path) -> None:
    """Fake: squeue and sacct fail while a flag file exists (a controller and accounting
    outage the shared cluster cannot have on demand). The job, cancelled meanwhile, gets no
    end event until Slurm answers again; then exactly one, CANCELLED."""
    shims, flag = tmp_path / "shims", tmp_path / "outage"
    shims.mkdir()
    for command in ("squeue", "sacct"):
        real = commands.run(["sh", "-c", f"command -v {command}"], timeout=10).stdout.strip()
        (shims / command).write_text(OUTAGE_SHIM.format(flag=flag, real=real))
        (shims / command).chmod(0o755)
    server = local_server(*FAST, path_prefix=shims)
    since = server.get("hpc-magics/jobs/events").json()["last"]
    submitted = commands.run(["sbatch", "--parsable", "-J", "notify-outage", "-t", "5", "-o",
                              "/dev/null", "--chdir=/tmp", "--wrap", "sleep 300"], timeout=30)
    assert submitted.ok, submitted.first_error_line()
    job_id = submitted.stdout.strip().split(";")[0]
    try:
        deadline = time.monotonic() + 60
        while job_id not in listed(server):
            assert time.monotonic() < deadline, f"job {job_id} never listed"
            time.sleep(1)
        flag.touch()
        assert commands.run(["scancel", job_id], timeout=30).ok
        time.sleep(10)  # five events intervals without an answer from Slurm
        answer = server.get("hpc-magics/jobs").json()
        assert answer["error"], "the list must say that Slurm did not answer"
        row = {job["job_id"]: job for job in answer["jobs"]}[job_id]
        assert row["final"] is False, f"an outage ended the job: {row}"
        events = server.get(f"hpc-magics/jobs/events?since={since}").json()["events"]
        assert job_id not in {e["job_id"] for e in events}
        flag.unlink()
        event = wait_for_event(server, since, job_id)
    finally:
        flag.unlink(missing_ok=True)
        commands.run(["scancel", job_id], timeout=30)
    assert event["state"] == "CANCELLED"
    events = server.get(f"hpc-magics/jobs/events?since={since}").json()["events"]
    assert [e["job_id"] for e in events].count(job_id) == 1


def test_a_local_backend_job_ends_as_an_event(local_server: StartLocal) -> None:
    """Without Slurm (HPC_MAGICS_BACKEND=local) the cells run here; their end is told too."""
    server = local_server(*FAST)
    since = server.get("hpc-magics/jobs/events").json()["last"]
    session = server.post("api/sessions", json={"path": "local.ipynb", "type": "notebook",
                                                "kernel": {"name": "python3"}})
    kernel = session.json()["kernel"]["id"]
    execute(server, kernel, "%load_ext hpc_magics\nimport hpc_magics\n"
                            "%hpc_resources --backend local -t 5")
    job_id = submit_from_kernel(server, kernel, "notify-local", "import time\ntime.sleep(2)")
    event = wait_for_event(server, since, job_id)
    # submitit's local executor says FINISHED: a success like COMPLETED
    assert event["phase"] == "done" and event["name"] == "notify-local"
    assert event["folder"].startswith("hpc_jobs/notify-local-")
    assert event["from_this_server"] is True
