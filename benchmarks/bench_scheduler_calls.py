"""Benchmark: scheduler calls per minute against tracked jobs and kernels (flat).

However many jobs a user tracks (1, 10, 100, 1000) and however many kernels watch them
(1, 5), the watcher may run one ``squeue`` and one ``sacct`` per interval for the user.
Counting wrappers for ``squeue`` and ``sacct`` come first on PATH; each kernel is its own
process polling all the jobs through the watcher twice a second (as widgets, handles and
``%hpc_jobs`` do, together), sharing the per-user queue cache as kernels do. The jobs are
real: held array tasks (pending for the whole run) and one finished job. The baseline is
the floor: one call of each per interval (plus the first), as a rate per minute.

    python benchmarks/bench_scheduler_calls.py [--seconds 15] [--interval 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _common import counting_wrappers, require_cluster, row, work_dir

from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.scheduler.job_status import record_submission

JOBS = (1, 10, 100, 1000)
KERNELS = (1, 5)

KERNEL = """
import sys, time
from pathlib import Path
from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.scheduler.queue import JobQueue
from hpc_magics.scheduler.watcher import Watcher
root, count, interval, seconds, cache = sys.argv[1:6]
folders = [JobFolder(p) for p in sorted(Path(root).iterdir())][:int(count)]
watcher = Watcher(JobQueue(interval_s=float(interval), cache_dir=Path(cache)))
end = time.monotonic() + float(seconds)
while time.monotonic() < end:
    watcher.poll(folders)
    time.sleep(0.5)
"""

def _sbatch(*args: str) -> str:
    done = subprocess.run(["sbatch", "--parsable", "-t", "1", "-o", "/dev/null", *args],
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip().split(";")[0]


def _wait_gone(job_id: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done = subprocess.run(["squeue", "-h", "-j", job_id], capture_output=True, text=True,
                              timeout=30, check=False)
        if not done.stdout.strip():
            return
        time.sleep(0.5)
    raise RuntimeError(f"job {job_id} did not finish in {timeout_s:.0f} s")


def _folders(root: Path, held: str, finished: str, count: int) -> list[JobFolder]:
    """``count`` job folders, held array tasks and (second) the finished job."""
    ids = [f"{held}_{task}" for task in range(count - 1)]
    ids.insert(1, finished)
    started = time.time()
    for index, job_id in enumerate(ids):
        folder = JobFolder.create(root, f"job{index:04d}")
        folder.write_meta({"name": f"job{index:04d}", "backend": "slurm",
                           "submitted_at": started - 5})
        record_submission(folder, job_id, started - 5)
    for index, path in enumerate(sorted(p for p in root.iterdir() if p.is_dir())):
        path.rename(root / f"{index:04d}-{path.name}")  # sorted: the first N are the ones
    return [JobFolder(p) for p in sorted(root.iterdir())]


def _unsettle(folder: JobFolder) -> None:
    """Forget a state the last round settled (kept in meta.json): every round asks anew."""
    folder.update_meta(state="SUBMITTED", state_source="recorded", state_note="")


def measure(seconds: float, interval: float) -> list[dict[str, Any]]:
    with work_dir("bench-calls-") as tmp:
        base = Path(tmp)
        bin_dir = base / "bin"
        counting_wrappers(bin_dir)
        finished = _sbatch("--wrap", "true")
        held = _sbatch("--hold", f"--array=0-{max(JOBS) - 2}", "--wrap", "true")
        try:
            _wait_gone(finished)
            jobs_root = base / "hpc_jobs"
            folders = _folders(jobs_root, held, finished, max(JOBS))
            results = []
            for kernels in KERNELS:
                for count in JOBS:
                    _unsettle(folders[1])
                    counts = base / f"counts-{count}-{kernels}"
                    counts.touch()
                    cache = base / f"cache-{count}-{kernels}"
                    cache.mkdir(mode=0o700)
                    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                               HPC_MAGICS_BENCH_COUNTS=str(counts))
                    procs = [subprocess.Popen(  # the kernels, all at once
                        [sys.executable, "-c", KERNEL, str(jobs_root), str(count),
                         str(interval), str(seconds), str(cache)], env=env)
                        for _ in range(kernels)]
                    for proc in procs:
                        if proc.wait(timeout=seconds + 120) != 0:
                            raise RuntimeError(f"a kernel failed ({count} jobs, {kernels})")
                    calls = counts.read_text().split()
                    results.append({"jobs": count, "kernels": kernels,
                                    "squeue": calls.count("squeue"),
                                    "sacct": calls.count("sacct")})
        finally:
            subprocess.run(["scancel", held], timeout=60, check=False)
    return results


def rows(seconds: float = 15.0, interval: float = 5.0) -> list[dict[str, Any]]:
    require_cluster()
    per_minute = 60.0 / seconds
    # the floor: one squeue and one sacct per interval, plus the first of each
    floor = 2 * (seconds / interval + 1)
    produced = []
    for result in measure(seconds, interval):
        ours = result["squeue"] + result["sacct"]
        produced.append(row(
            f"squeue+sacct calls per minute, {result['jobs']} jobs, {result['kernels']} "
            f"kernel{'s' if result['kernels'] > 1 else ''} ({result['squeue']} squeue, "
            f"{result['sacct']} sacct in {seconds:g} s, interval {interval:g} s)",
            ours * per_minute, floor * per_minute, target="<= 1x (one each per interval)",
            ok=ours <= floor, digits=1))
    return produced


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--interval", type=float, default=5.0)
    args = parser.parse_args()
    produced = rows(args.seconds, args.interval)
    for produced_row in produced:
        print(f"{produced_row['metric']}: {produced_row['ours']} vs floor "
              f"{produced_row['baseline']} ({produced_row['verdict']})")
    return 0 if all(r["verdict"] == "ok" for r in produced) else 1


if __name__ == "__main__":
    sys.exit(main())
