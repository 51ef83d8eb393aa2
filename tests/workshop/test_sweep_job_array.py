"""notebooks/sweep-job-array.ipynb, run top to bottom on the test cluster: what its outputs say.

The sweep's losses are checked against the maths the notebook teaches (gradient descent on
exactly whitened inputs: each step multiplies the distance to the best weights by
``1 - lr * input_scale**2``), with the data made by the ``toy_model.py`` the notebook wrote.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from .conftest import Executed, execute

STEPS = 3
GRID = [(lr, scale) for lr in (0.1, 0.2, 0.4, 1.0) for scale in (1, 2)]


def table_rows(text: str) -> list[dict[str, str]]:
    """The rows of a DataFrame as the notebook printed it (index first, no spaces in values)."""
    lines = [line for line in text.splitlines() if line.strip()]
    header = lines[0].split()
    rows = []
    for line in lines[1:]:
        index, *values = line.split()
        assert len(values) == len(header), line
        rows.append({"index": index, **dict(zip(header, values, strict=True))})
    return rows


def toy_model(folder: Path) -> Any:
    spec = importlib.util.spec_from_file_location("toy_model_as_written", folder / "toy_model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def predicted_loss(folder: Path, lr: float, scale: int) -> float:
    """floor + (1 - lr·scale²)^(2·steps) · (start - floor): the loss the maths says."""
    inputs, targets = toy_model(folder).make_data(1)
    best, *_ = np.linalg.lstsq(inputs, targets, rcond=None)
    floor = float(np.mean((inputs @ best - targets) ** 2))
    start = float(np.mean(targets ** 2))
    return floor + (1 - lr * scale ** 2) ** (2 * STEPS) * (start - floor)


def grid_lr_the_maths_picks(scale: int) -> float:
    stable = [lr for lr, s in GRID if s == scale and abs(1 - lr * scale ** 2) < 1]
    return min(stable, key=lambda lr: abs(1 - lr * scale ** 2))


def check_the_sweep(run: Executed) -> tuple[str, str]:
    """The dry run, the table, the best point, the failure and its retry; the array ids."""
    dry = run.output_of("%%sbatch --sweep lr=0.1,0.2,0.4,1.0 --sweep input_scale=1,2 "
                        "--array-parallelism 4 --dry-run")
    assert re.findall(r"^#SBATCH --array=.*$", dry, re.M) == ["#SBATCH --array=0-7%4"], dry
    assert "a sweep of 8 tasks as 1 job array" in dry and "#SBATCH --partition=long" in dry
    assert "toy_model (module toy_model)" in dry  # the model travels by name

    waited = run.output_of("%%sbatch --sweep lr=0.1,0.2,0.4,1.0 --sweep input_scale=1,2 "
                           "--array-parallelism 4 --name lr-sweep --wait")
    assert "toy_model (module toy_model) (once, for all 8 tasks)" in waited, waited
    # --wait shows the whole table: parameters, the cell's results, state, elapsed, error
    assert re.search(r"lr\s+input_scale\s+weights\s+loss\s+state", waited), waited
    assert re.search(r"elapsed\s+error", waited) and "Traceback" in waited, waited

    ids = run.output_of("import hpc_magics")
    sweep_id = re.search(r"array job (\d+)", ids).group(1)  # type: ignore[union-attr]
    assert str({i: f"{sweep_id}_{i}" for i in range(8)}) in ids
    sacct = run.output_of("!sacct")
    for task in range(8):
        state = "FAILED" if task == 7 else "COMPLETED"
        assert re.search(rf"^\s*{sweep_id}_{task}\s+lr-sweep\s+{state}\s", sacct, re.M), sacct

    rows = table_rows(run.output_of("table = sweep.table()"))
    assert [(float(r["lr"]), int(r["input_scale"])) for r in rows] == GRID
    for row in rows[:7]:
        assert row["state"] == "COMPLETED" and float(row["elapsed"]) > 0
        expected = predicted_loss(run.folder, float(row["lr"]), int(row["input_scale"]))
        assert float(row["loss"]) == pytest.approx(expected, rel=1e-5, abs=2e-6), row
    assert (rows[7]["lr"], rows[7]["input_scale"], rows[7]["loss"], rows[7]["state"]) == \
        ("1.0", "2", "NaN", "FAILED")

    # the notebook's own prediction column agrees with what the cluster computed
    compared = table_rows(run.output_of("import numpy as np"))
    for row, measured in zip(compared[:7], rows[:7], strict=True):
        assert float(row["predicted"]) == pytest.approx(float(measured["loss"]), abs=2e-6), row
    assert compared[7]["loss"] == "NaN" and float(compared[7]["predicted"]) == pytest.approx(
        predicted_loss(run.folder, 1.0, 2), rel=1e-5) and float(compared[7]["predicted"]) > 1000

    best = run.output_of('done = table[table["state"] == "COMPLETED"]')
    assert "best point: lr=1.0, input_scale=1, loss=0.0105" in best, best
    per_scale = table_rows(best.split("\n", 1)[1])
    assert [(int(r["input_scale"]), float(r["lr"])) for r in per_scale] == \
        [(1, grid_lr_the_maths_picks(1)), (2, grid_lr_the_maths_picks(2))] == [(1, 1.0), (2, 0.2)]
    assert run.images() >= 1  # the plot

    failed = run.output_of('failed = table[table["state"] == "FAILED"]')
    assert re.search(r"^7\s+1\.0\s+2$", failed, re.M), failed
    assert "toy_model.py" in failed and 'raise FloatingPointError(f"diverged' in failed
    assert "FloatingPointError: diverged at step 1: loss 47.2 > 5.26 at the start " \
           "(lr=1.0, input_scale=2)" in failed, failed

    retry = run.output_of("import importlib")
    retry_id = re.search(r"retried as job (\d+)", retry).group(1)  # type: ignore[union-attr]
    assert retry_id != sweep_id and "the sweep is now COMPLETED" in retry
    after = table_rows(retry.split("COMPLETED\n", 1)[1])
    assert [r["state"] for r in after] == ["COMPLETED"] * 8
    assert [r["loss"] for r in after[:7]] == [r["loss"] for r in rows[:7]]
    assert after[7]["loss"] == "inf"  # the fixed toy_model.py ran: divergence is an answer
    return sweep_id, retry_id


def check_the_efficiency(run: Executed, sweep_id: str, retry_id: str) -> None:
    """One report per point's latest attempt, each naming the time it should have asked."""
    report = run.output_of("%hpc_efficiency")
    summary = report.splitlines()[:2]
    # tasks under a second have no CPU efficiency (sacct says 0 s elapsed): n/a, as per task
    assert re.fullmatch(r"8 tasks: 8 COMPLETED; CPU efficiency (n/a|\d+%(-\d+%)?); memory peak "
                        r"(n/a|[\d.]+[MG](-[\d.]+[MG])?); time \d+s(-\d+s)? of 2h00m",
                        summary[0]), report
    assert re.fullmatch(r"advice for 8 of 8 tasks(, most often \(\d\))?: asked 2h00m of time, "
                        r"used \d+s: -t 1 would start sooner \(backfill fits short jobs first\)",
                        summary[1]), report
    tasks = [line for line in report.splitlines() if line.startswith("task ")]
    assert tasks == [f"task {sweep_id}_{i}:" for i in range(7)] + [f"task {retry_id}_0:"], report
    assert report.count("  state COMPLETED") == 8
    assert len(re.findall(r"^  CPU efficiency (\d+%|n/a) \(\d\.\ds of CPU time on 1 CPU\)$",
                          report, re.M)) == 8, report
    assert len(re.findall(r"^  time \d+s of 2h00m \(0%\)$", report, re.M)) == 8, report
    # a task of seconds asked for 2 hours: ask for a minute (double the use, rounded up)
    assert len(re.findall(r"^  advice: asked 2h00m of time, used \d+s: -t 1 would start "
                          r"sooner \(backfill fits short jobs first\)$", report, re.M)) == 8


def check_the_follow_up(run: Executed) -> None:
    """--sweep-from a list of dicts; squeue -r; the -d line."""
    submitted = run.output_of("%%sbatch --sweep-from follow_up")
    follow_id = re.search(r"sweep (\d+): table later", submitted).group(1)  # type: ignore[union-attr]
    assert "for all 3 tasks" in submitted
    queue = run.output_of("follow = hpc_magics.job()")
    assert "JOBID" in queue and f"{follow_id}_0" in queue, queue  # one line per task
    assert all(re.match(rf"\s*{follow_id}_[0-2]\s+follow-up\s", line)
               for line in queue.splitlines()[1:] if line.strip()), queue
    done = run.output_of('print("follow-up sweep:"')
    assert "follow-up sweep: COMPLETED" in done
    rows = table_rows(done.split("\n", 1)[1])
    assert [(r["lr"], r["input_scale"], r["state"]) for r in rows] == \
        [("0.20", "2", "COMPLETED"), ("0.25", "2", "COMPLETED"), ("0.30", "2", "COMPLETED")]
    losses = [float(r["loss"]) for r in rows]
    assert losses[0] == losses[2] > losses[1]  # |1 - 0.2·4| = |1 - 0.3·4|
    assert losses[1] == pytest.approx(predicted_loss(run.folder, 0.25, 2), abs=2e-6)

    chained = run.output_of("%%sbatch -d afterok:follow --dry-run")
    assert f"#SBATCH --dependency=afterok:{follow_id}" in chained, chained


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_sweep_job_array_notebook(slurm_cluster: Any, student_folder: Path) -> None:
    run = execute("sweep-job-array.ipynb", student_folder, timeout=300)
    real = run.output_of("%hpc_resources --profile alvis")
    assert "#SBATCH --gpus-per-node=T4:1" in real and "GPU-h" in real
    assert "#SBATCH --partition=long" in run.output_of("%hpc_resources --reset --profile lab")
    sweep_id, retry_id = check_the_sweep(run)
    check_the_efficiency(run, sweep_id, retry_id)
    check_the_follow_up(run)
