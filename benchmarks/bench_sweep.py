"""Benchmark: a 1,000-point sweep, submitted and tabulated.

1. Submission, in the notebook's time: ``%%sbatch --sweep-from points`` of 1,000 points in
   a real IPython shell (analysis, shipping, the job folder, 1,000 task pickles, ONE sbatch),
   against ``sbatch --array=0-999 --wrap true`` in the same run. Target: at most 2 s. Both
   arrays are submitted held (``--hold``) and cancelled at once: they are ours, and the
   shared cluster should not run them.
2. The results table of a finished sweep: a synthetic job folder of 1,000 task results in
   the runner's own format (``CellResult`` pickles, ``task.json``), recorded as from
   another cluster so the watcher decides from the files alone and asks Slurm nothing about
   it; ``SweepHandle.table()`` against reading the same files with a plain loop. Target:
   under 1 s. pandas is imported before the clock starts: importing it is the kernel's
   one-time cost, not the table's. Each round reads a new finished sweep, both sides the
   same one.

Both pairs: a warm-up round, then rounds in alternating order, medians
(``HPC_MAGICS_BENCH_REPEAT``, default 3).

    python benchmarks/bench_sweep.py      (needs Slurm; exits non-zero when over a target)
"""

from __future__ import annotations

import json
import pickle
import sys
import time
from pathlib import Path
from typing import Any

from _common import interleaved, repeat_count, work_dir

POINTS = 1000
SUBMIT_TARGET_S = 2.0
TABLE_TARGET_S = 1.0
CELL = "#SBATCH --hold\nloss = (lr - 0.01) ** 2 * batch\naccuracy = 1 / (1 + loss)\n"


def _row(metric: str, ours: float, baseline: float, target: float) -> dict[str, Any]:
    return {"metric": metric, "ours": round(ours, 4), "baseline": round(baseline, 4),
            "ratio": round(ours / baseline, 2) if baseline > 0 else float("inf"),
            "target": f"ours <= {target:g} s", "verdict": "ok" if ours <= target else "over"}


def _points() -> list[dict[str, Any]]:
    return [{"lr": 10 ** -(1 + i % 5), "batch": 16 * (1 + i // 5)} for i in range(POINTS)]


def _cancel(job_id: str) -> None:
    from hpc_magics.scheduler import commands

    commands.run(["scancel", job_id], timeout=30)


def submission(workdir: Path, repeat: int) -> dict[str, Any]:
    """Time the %%sbatch of a 1,000-point sweep and of a plain 1,000-task sbatch array."""
    from IPython.core.interactiveshell import InteractiveShell

    from hpc_magics.scheduler import commands
    from hpc_magics.scheduler.submit import parse_answer

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "hpc_magics")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    magics.jobs_dir = str(workdir / "hpc_jobs")
    shell.run_line_magic("hpc_resources", "--backend slurm -t 5")
    shell.user_ns["points"] = _points()
    arrays: list[str] = []

    def baseline() -> float:
        started = time.perf_counter()
        answer = commands.run(["sbatch", "--parsable", "--hold", "--array=0-999", "-t", "5",
                               "-o", "/dev/null", "--wrap", "true"], timeout=60)
        elapsed = time.perf_counter() - started
        if not answer.ok:
            raise RuntimeError(f"sbatch failed: {answer.first_error_line()}")
        _cancel(parse_answer(answer.stdout).job_id)
        return elapsed

    def ours() -> float:
        started = time.perf_counter()
        shell.run_cell_magic("sbatch", "--sweep-from points --name bench-sweep", CELL)
        elapsed = time.perf_counter() - started
        handle = magics.handles[magics.last_job]
        arrays[:] = handle.array_ids()
        for array_id in arrays:
            _cancel(array_id)
        if len(arrays) != 1:
            raise RuntimeError(f"the sweep took {len(arrays)} sbatch calls, not one")
        return elapsed

    # a warm-up round and alternating order: neither side pays the first sbatch alone
    ours_s, baseline_s = interleaved(repeat, ours, baseline)
    return _row(f"submit a {POINTS}-point sweep, one sbatch (s)", ours_s, baseline_s,
                SUBMIT_TARGET_S)


def synthetic_sweep(root: Path) -> Path:
    """A finished sweep's job folder, written in the runner's formats."""
    from hpc_magics.core.sweep import compress
    from hpc_magics.jobfolder.files import CellResult, write_results
    from hpc_magics.jobfolder.folder import JobFolder
    from hpc_magics.jobfolder.tasks import POINTS_FILE, task_dir
    from hpc_magics.shipping.stream import dump_results

    folder = JobFolder.create(root, "synthetic-sweep")
    points = _points()
    (folder.path / POINTS_FILE).write_bytes(pickle.dumps(points))
    for index, point in enumerate(points):
        target = task_dir(folder.path, index)
        target.mkdir(parents=True, mode=0o700)
        loss = (point["lr"] - 0.01) ** 2 * point["batch"]
        state, referenced = dump_results({"loss": loss, "accuracy": 1 / (1 + loss)}, None, {})
        result = CellResult(state=state, names=("loss", "accuracy"), referenced=referenced,
                            hostname="c1")
        write_results(target, result, f"900000_{index}", elapsed=1.5)  # as the runner does
    folder.write_meta({
        "name": "synthetic-sweep", "backend": "slurm", "kind": "sweep", "job_id": "900000",
        "results": ["loss", "accuracy"], "cluster": "synthetic-benchmark-cluster",
        "submitted_at": time.time(), "submit_returned_at": time.time(), "state": "SUBMITTED",
        "sweep": {"count": POINTS, "parameters": ["lr", "batch"], "parallelism": None,
                  "arrays": [{"job_id": "900000", "indices": compress(range(POINTS)),
                              "script": "job.sh", "attempt": 0}]}})
    return folder.path


def table(root: Path, repeat: int) -> dict[str, Any]:
    """Time SweepHandle.table() against a plain loop reading the same files."""
    from hpc_magics.backends import get_backend
    from hpc_magics.jobfolder.files import OUTCOME_FILE
    from hpc_magics.jobfolder.folder import JobFolder
    from hpc_magics.jobfolder.tasks import task_dir
    from hpc_magics.shipping.stream import load_results
    from hpc_magics.sweep_handle import SweepHandle

    def plain_loop(path: Path) -> list[dict[str, Any]]:
        with (path / "points.pkl").open("rb") as stream:
            points = pickle.load(stream)
        rows = []
        for index, point in enumerate(points):
            target = task_dir(path, index)
            with (target / "results.pkl").open("rb") as stream:
                result = pickle.load(stream)
            values, _ = load_results(result.state, lambda name: None)
            info = json.loads((target / OUTCOME_FILE).read_text())
            rows.append({**point, **values, "elapsed": info["elapsed"]})
        return rows

    try:  # a one-time cost of the kernel (a notebook using DataFrames has paid it already)
        import pandas  # noqa: F401
    except ImportError:
        pass
    # one finished sweep per round, read by both sides (ours keeps nothing from the last)
    sweeps = [synthetic_sweep(root / f"round-{index}") for index in range(repeat + 1)]
    ours_sweeps, baseline_sweeps = iter(sweeps), iter(sweeps)

    def baseline() -> float:
        path = next(baseline_sweeps)
        started = time.perf_counter()
        plain_loop(path)
        return time.perf_counter() - started

    def ours() -> float:
        path = next(ours_sweeps)
        handle = SweepHandle("900000", get_backend("slurm"), JobFolder(path), "synthetic-sweep")
        started = time.perf_counter()
        result = handle.table()
        elapsed = time.perf_counter() - started
        got = result.to_dict("records") if hasattr(result, "to_dict") else result
        expected = plain_loop(path)
        if len(got) != POINTS or [r["loss"] for r in got] != [r["loss"] for r in expected] \
                or {r["state"] for r in got} != {"COMPLETED"}:
            raise RuntimeError("the table does not hold every task's results")
        return elapsed

    ours_s, baseline_s = interleaved(repeat, ours, baseline)
    return _row(f"results table of {POINTS} finished tasks (s)", ours_s, baseline_s,
                TABLE_TARGET_S)


def rows() -> list[dict[str, Any]]:
    with work_dir("bench-sweep-") as workdir:
        repeat = repeat_count(3)
        return [submission(workdir, repeat), table(workdir / "synthetic", repeat)]


def main() -> int:
    measured = rows()
    for row in measured:
        print(f"{row['metric']}: ours {row['ours']:.3f} s, baseline {row['baseline']:.3f} s, "
              f"ratio {row['ratio']}, target {row['target']}: {row['verdict']}")
    return 0 if all(row["verdict"] == "ok" for row in measured) else 1


if __name__ == "__main__":
    sys.exit(main())
