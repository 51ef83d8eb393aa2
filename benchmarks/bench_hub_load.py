"""Benchmark: what a whole hub of users costs the Slurm controller (slurmctld and slurmdbd).

N users (1, 10, 100), each its own Unix user (made for the run: ``hpcm_bench_NNN``, no
home, no login shell, removed at the end), each with a server and two kernels watching 10
jobs of the user's: a held array of 9 tasks, pending all along, and one job that ended
before (cancelled while held: accounting is asked about it once, then it is settled).
Stand-ins: 100 JupyterLab servers and 200 kernels do not fit in this 2-core machine, so
the processes that poll stand in for them: per user three processes, each one
``Watcher()`` as the server and a kernel make it (the interval from the site's
``HPC_MAGICS_POLL_INTERVAL``, the shared cache files in the user's own Jupyter runtime
folder), polling the user's 10 jobs every second.

slurmctld's RPCs per user come from ``sdiag`` (reset with ``sdiag -r`` before each
window), slurmdbd's (``sacct``) from ``sacctmgr show stats`` (reset with ``sacctmgr clear
stats``), over a window of a fixed number of poll intervals. The anchor, measured the same
way in the same run: per user one ``squeue -u`` and one ``sacct -u`` per interval. Target:
per user no more than the anchor, whatever the number of users: the hub's total linear in
users. Needs root (``sdiag -r``, ``useradd``, processes as the users).

    python benchmarks/bench_hub_load.py [--users 1 10 100] [--interval 3] [--intervals 5]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import Skipped, counting_wrappers, require_cluster, row

USERS = (1, 10, 100)
PREFIX = "hpcm_bench_"
JOBS_PER_USER = 10
WATCHERS = 3  # the server's and two kernels'

# One of a user's processes that poll (a server's or a kernel's watcher, as they are made
# there: the interval is the site's HPC_MAGICS_POLL_INTERVAL, the cache files are in the
# user's Jupyter runtime folder). The first makes the folders of the user's 10 jobs; each
# says it is ready, waits for the go file (it holds the window's end) and polls until then.
# The anchor instead runs one squeue and one sacct per interval, nothing shared.
USER = """
import os, subprocess, sys, time
from pathlib import Path
from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.scheduler.job_status import record_submission
from hpc_magics.scheduler.queue import poll_interval
from hpc_magics.scheduler.watcher import Watcher
work, array, finished, count, index, go, mode = sys.argv[1:8]
work, go = Path(work), Path(go)
made = work / "made"
if index == "0" and mode == "ours":
    for number, job_id in enumerate([finished] + [f"{array}_{t}" for t in range(int(count) - 1)]):
        folder = JobFolder.create(work / "hpc_jobs", f"job{number:02d}")
        folder.write_meta({"name": folder.path.name, "backend": "slurm",
                           "submitted_at": time.time() - 60})
        record_submission(folder, job_id, time.time() - 60)
    made.touch()
while mode == "ours" and not made.exists():
    time.sleep(0.05)
folders = [JobFolder(p) for p in sorted((work / "hpc_jobs").iterdir())] if mode == "ours" else []
watcher = Watcher()
watcher.queue.cluster  # asked now (scontrol), not in the window
(work / f"ready-{index}").touch()
while not go.exists():
    time.sleep(0.05)
end = float(go.read_text())
user, interval = os.environ["USER"], poll_interval()
while time.time() < end:
    asked = time.monotonic()
    if mode == "ours":
        watcher.poll(folders)
        time.sleep(1.0)
        continue
    for argv in (["squeue", "-h", "-t", "all", "-u", user],
                 ["sacct", "-n", "-X", "-u", user, "-S", "now-1hours"]):
        subprocess.run(argv, capture_output=True, timeout=60, check=False)
    time.sleep(max(0.0, interval - (time.monotonic() - asked)))
"""


def _root_command(argv: list[str], timeout: float = 60) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


@contextlib.contextmanager
def bench_users(count: int) -> Iterator[list[str]]:
    """``count`` Unix users for the run (made when missing; the ones made here removed)."""
    names = [f"{PREFIX}{index:03d}" for index in range(count)]
    made = []
    try:
        for name in names:
            try:
                pwd.getpwnam(name)
            except KeyError:
                _root_command(["useradd", "--system", "--no-create-home", "--no-user-group",
                               "--gid", "nogroup", "--shell", "/usr/sbin/nologin", name])
                made.append(name)
        yield names
    finally:
        for name in made:
            subprocess.run(["userdel", name], capture_output=True, timeout=60, check=False)


def _as(name: str) -> dict[str, Any]:
    entry = pwd.getpwnam(name)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def _environment(name: str, home: Path, **more: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k.startswith("HPC_MAGICS_")},
            "PATH": os.environ["PATH"], "USER": name, "LOGNAME": name, "HOME": str(home),
            "LANG": "C.UTF-8", "SLURM_CLUSTER_NAME": _cluster(), **more}


@functools.cache
def _cluster() -> str:
    text = _root_command(["scontrol", "show", "config"])
    found = re.search(r"^ClusterName\s*=\s*(\S+)", text, re.MULTILINE)
    return found.group(1) if found else "default"


def _submit(name: str, work: Path, *options: str) -> str:
    done = subprocess.run(["sbatch", "--parsable", *options, "-t", "1", "-o", "/dev/null",
                           "-J", "hub-load", "--wrap", "true"],
                          capture_output=True, text=True, timeout=60, check=False, cwd=work,
                          env=_environment(name, work), **_as(name))
    if done.returncode != 0:
        raise RuntimeError(f"sbatch as {name}: {done.stderr.strip()}")
    return done.stdout.strip().split(";")[0]


def _wait_gone(job_ids: list[str], timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while _root_command(["squeue", "-h", "-j", ",".join(job_ids), "-o", "%i"]).strip():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the users' first jobs did not end in {timeout_s:.0f} s")
        time.sleep(1)


def _per_user(text: str, names: list[str]) -> dict[str, int]:
    """The ``count:`` of each of ``names`` in the "by user" section of sdiag or sacctmgr."""
    section = text.split("statistics by user", 1)[-1]
    counts = dict.fromkeys(names, 0)
    for found in re.finditer(r"^\s*(\S+)\s*\(\s*\d+\)\s*count:(\d+)", section, re.MULTILINE):
        if found.group(1) in counts:
            counts[found.group(1)] = int(found.group(2))
    return counts


Counts = dict[str, int]


def window(names: list[str], works: dict[str, Path], jobs: dict[str, tuple[str, str]], mode: str,
           interval: float, intervals: int, base: Path) -> tuple[Counts, Counts, Counts, Counts]:
    """One window: the users' processes start, wait, poll ``intervals`` intervals; per
    user the RPC counts (slurmctld, slurmdbd) and the calls of squeue and of sacct."""
    go = base / f"go-{mode}-{len(names)}"
    procs = []
    each = WATCHERS if mode == "ours" else 1
    for name in names:
        work = works[name] / mode
        work.mkdir(mode=0o700)
        os.chown(work, *(pwd.getpwnam(name)[2:4]))
        env = _environment(name, works[name], HPC_MAGICS_POLL_INTERVAL=f"{interval:g}",
                           JUPYTER_RUNTIME_DIR=str(work / "runtime"),
                           HPC_MAGICS_BENCH_COUNTS=str(work / "calls"),
                           PATH=f"{base / 'bin'}{os.pathsep}{os.environ['PATH']}")
        procs += [subprocess.Popen(
            [sys.executable, "-c", USER, str(work), *jobs[name], str(JOBS_PER_USER),
             str(index), str(go), mode], cwd=work, env=env, **_as(name))
            for index in range(each)]
    deadline = time.monotonic() + 600
    while not all((works[n] / mode / f"ready-{i}").exists() for n in names for i in range(each)):
        if any(p.poll() not in (None, 0) for p in procs) or time.monotonic() > deadline:
            raise RuntimeError(f"{mode}: a user's process did not get ready")
        time.sleep(0.2)
    _root_command(["sdiag", "-r"])
    _root_command(["sacctmgr", "-i", "clear", "stats"])
    since = _since(_root_command(["sdiag"]))
    go.write_text(str(time.time() + interval * intervals))
    go.chmod(0o644)
    for proc in procs:
        if proc.wait(timeout=interval * intervals + 300) != 0:
            raise RuntimeError(f"{mode}: a user's process failed")
    ctld = _root_command(["sdiag"])
    if _since(ctld) != since:
        raise RuntimeError("sdiag was reset by someone else during the window: run again")
    calls = {name: _calls(works[name] / mode / "calls") for name in names}
    return (_per_user(ctld, names), _per_user(_root_command(["sacctmgr", "show", "stats"]), names),
            {name: called.count("squeue") for name, called in calls.items()},
            {name: called.count("sacct") for name, called in calls.items()})


def _calls(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []




def _since(sdiag: str) -> str:
    found = re.search(r"Data since\s+(.*)", sdiag)
    return found.group(1).strip() if found else ""


def measure(users: tuple[int, ...], interval: float, intervals: int) -> list[dict[str, Any]]:
    results = []
    with bench_users(max(users)) as everyone, tempfile.TemporaryDirectory(
            prefix="hpcm-hub-load-") as tmp:
        base = Path(tmp)
        base.chmod(0o755)
        counting_wrappers(base / "bin")
        works: dict[str, Path] = {}
        jobs: dict[str, tuple[str, str]] = {}  # user → (held array, ended job)
        try:
            for name in everyone:
                works[name] = base / name
                works[name].mkdir(mode=0o700)
                os.chown(works[name], *(pwd.getpwnam(name)[2:4]))
                # each job kept the moment it exists: a failed submission leaks none
                held = _submit(name, works[name], "--hold", f"--array=0-{JOBS_PER_USER - 2}")
                jobs[name] = (held, "")
                jobs[name] = (held, _submit(name, works[name], "--hold"))
            # the ended job is cancelled before it ran: over, with nothing run on the
            # nodes others' tests share
            ended = [ended for _, ended in jobs.values()]
            _root_command(["scancel", *ended])
            _wait_gone(ended)
            for count in users:
                names = everyone[:count]
                for name in names:  # a fresh start for each row: no cache, no folders
                    for mode in ("anchor", "ours"):
                        shutil.rmtree(works[name] / mode, ignore_errors=True)
                counted = {}
                for mode in ("anchor", "ours") if count % 2 else ("ours", "anchor"):
                    counted[mode] = window(names, works, jobs, mode, interval, intervals,
                                           base)
                results.append({"users": count, **{
                    f"{mode}_{daemon}": counts
                    for mode, pair in counted.items()
                    for daemon, counts in zip(("ctld", "dbd", "squeue", "sacct"), pair,
                                              strict=True)}})
        finally:
            leftover = [job for pair in jobs.values() for job in pair if job]
            if leftover:
                subprocess.run(["scancel", *leftover], capture_output=True, timeout=60,
                               check=False)
    return results


def rows(users: tuple[int, ...] = USERS, interval: float = 3.0,
         intervals: int = 5) -> list[dict[str, Any]]:
    require_cluster()
    if os.geteuid() != 0:
        raise Skipped("needs root: sdiag -r, sacctmgr clear stats, useradd, the users' "
                      "processes (scripts/run-benchmarks as root)")
    produced = []
    for result in measure(users, interval, intervals):
        count = result["users"]
        for daemon, command, what in (("ctld", "squeue", "slurmctld RPCs (sdiag)"),
                                      ("dbd", "sacct", "slurmdbd RPCs (sacctmgr show stats)")):
            ours, anchor = result[f"ours_{daemon}"], result[f"anchor_{daemon}"]
            per_user = sum(ours.values()) / count / intervals
            anchor_per_user = sum(anchor.values()) / count / intervals
            # the target itself: no user's processes called it more than once an interval
            most_calls = max(result[f"ours_{command}"].values())
            produced.append(row(
                f"{what} per user per interval, {count} user{'s' if count > 1 else ''} "
                f"(own Unix users), each a server and 2 kernels watching {JOBS_PER_USER} "
                f"jobs (stand-ins: 3 watcher processes per user); total "
                f"{sum(ours.values())} vs {sum(anchor.values())}, most for one user "
                f"{max(ours.values())}; {command} calls: at most {most_calls} for one user "
                f"in {intervals} intervals of {interval:g} s",
                per_user, anchor_per_user,
                target=f"<= 1x (anchor: one squeue and one sacct per user per interval), "
                       f"<= 1 {command} per interval",
                ok=per_user <= anchor_per_user and most_calls <= intervals, digits=2))
    return produced


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, nargs="*", default=list(USERS))
    parser.add_argument("--interval", type=float, default=3.0)
    parser.add_argument("--intervals", type=int, default=5)
    args = parser.parse_args()
    produced = rows(tuple(args.users), args.interval, args.intervals)
    for produced_row in produced:
        print(f"{produced_row['metric']}: {produced_row['ours']} vs anchor "
              f"{produced_row['baseline']} ({produced_row['verdict']})")
    return 0 if all(r["verdict"] == "ok" for r in produced) else 1


if __name__ == "__main__":
    sys.exit(main())
