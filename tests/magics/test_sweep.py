"""Sweeps as ONE Slurm job array, and -d on this notebook's jobs, on the real test cluster.

``sbatch`` is counted with a wrapper named ``sbatch`` first on PATH: it logs its arguments
and execs the real one.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from hpc_magics.scheduler import commands, limits
from hpc_magics.scheduler.slurm_text import slurm_timestamp


@pytest.fixture
def slurm_shell(shell: Any, slurm_cluster: Any) -> Any:
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    return shell


@pytest.fixture
def sbatch_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every sbatch call from now on is logged (one line: the script it got)."""
    real = shutil.which("sbatch")
    assert real is not None
    wrappers = tmp_path / "wrapped bin"
    wrappers.mkdir()
    log = tmp_path / "sbatch.log"
    log.touch()
    wrapper = wrappers / "sbatch"
    wrapper.write_text(f'#!/bin/bash\necho "${{@: -1}}" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    monkeypatch.setenv("PATH", f"{wrappers}{os.pathsep}{os.environ['PATH']}")
    yield log


@pytest.fixture
def fresh_limits() -> Iterator[None]:
    limits.forget()
    yield
    limits.forget()


def sbatch_calls(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.strip()]


def magics_of(shell: Any) -> Any:
    return shell.magics_manager.registry["HpcMagicsKernel"]


def last_handle(shell: Any) -> Any:
    magics = magics_of(shell)
    return magics.handles[magics.last_job]


SQUARES = """
import json
import os
value = x * x
size = len(blob)
if x == 7 and not os.path.exists(flag):
    open(flag, "w").close()
    raise RuntimeError("first try of 7")
"""


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_twenty_points_one_array_table_and_retry(slurm_shell: Any, sbatch_log: Path,
                                                 tmp_path: Path, fresh_limits: None) -> None:
    slurm_shell.user_ns.update(flag=str(tmp_path / "seven-failed-once"), blob=b"x" * 200_000)
    values = ",".join(str(i) for i in range(20))
    slurm_shell.run_cell_magic("sbatch", f"--sweep x={values} --array-parallelism 10 "
                                         "--name squares", SQUARES)
    handle = last_handle(slurm_shell)
    calls = sbatch_calls(sbatch_log)
    assert len(calls) == 1, calls  # ONE sbatch call, ONE job array
    script = Path(calls[0]).read_text()
    assert "#SBATCH --array=0-19%10" in script
    assert "%A_%a_0_log.out" in script
    # the shipped state is in the folder once; each task's pickle is small
    folder = handle.folder.path
    assert (folder / "payload.pkl").stat().st_size > 200_000
    task_pickles = sorted(folder.glob("*_submitted.pkl"))
    assert len(task_pickles) == 20
    assert max(p.stat().st_size for p in task_pickles) < 20_000

    assert handle.wait(timeout=300) == "FAILED"  # task 7 raised
    table = handle.table()
    assert list(table.columns) == ["x", "value", "size", "state", "elapsed", "error"]
    assert list(table["x"]) == list(range(20))
    ok = table[table["x"] != 7]
    assert list(ok["value"]) == [i * i for i in range(20) if i != 7]
    assert set(ok["size"]) == {200_000} and set(ok["state"]) == {"COMPLETED"}
    assert (ok["error"] == "").all() and (ok["elapsed"] > 0).all()
    seven = table[table["x"] == 7].iloc[0]
    assert seven["state"] == "FAILED"
    assert 'raise RuntimeError("first try of 7")' in seven["error"]
    assert "RuntimeError: first try of 7" in seven["error"]

    assert "RuntimeError: first try of 7" in handle.log()  # the failed task's log

    # the widget's sweep section counts the tasks per state
    from hpc_magics.magics.widget_monitor import job_widget

    widget = job_widget(handle)
    assert widget.sweep is not None
    assert "20 tasks" in widget.sweep.counts.value and "1 FAILED" in widget.sweep.counts.value
    assert "task 7: <code>{&#x27;x&#x27;: 7}" in widget.sweep.failures.value
    assert "<table" in widget.sweep.table.value and "first try of 7" in widget.sweep.table.value
    assert widget.fetch_button.layout.display == "none"  # the table is the sweep's results
    # the job widget's Rerun button is the sweep's "Retry failed" (its failed tasks only)
    assert widget.rerun_button.description == "Retry failed"
    assert widget.rerun_button.layout.display != "none"

    # the failed tasks only, with more: one more sbatch, an array of one
    assert handle.rerun(mem="1G") is handle
    calls = sbatch_calls(sbatch_log)
    assert len(calls) == 2, calls
    assert Path(calls[1]).name == "job-retry1.sh"
    assert "#SBATCH --array=0%10" in Path(calls[1]).read_text()
    assert "#SBATCH --mem=1G" in Path(calls[1]).read_text()
    assert handle.wait(timeout=120) == "COMPLETED"
    table = handle.table()
    assert table[table["x"] == 7].iloc[0][["value", "state", "error"]].tolist() == \
        [49, "COMPLETED", ""]
    assert set(table["state"]) == {"COMPLETED"}


@pytest.mark.timeout(300)
def test_past_max_array_size_the_sweep_is_split(slurm_shell: Any, sbatch_log: Path,
                                                fresh_limits: None) -> None:
    """FAKE limit: the shared cluster's MaxArraySize is 1001 and its slurm.conf must not
    change, so a limit of 3 is put in the cache ``scontrol show config`` fills."""
    limits.remember("max_array_size", 3)
    slurm_shell.user_ns["grid"] = {"a": [1, 2, 3, 4, 5, 6, 7], "b": list("abcdefg")}
    slurm_shell.run_cell_magic("sbatch", "--sweep-from grid --wait", "label = b * a")
    calls = sbatch_calls(sbatch_log)
    assert [Path(c).name for c in calls] == ["job.sh", "job-2.sh", "job-3.sh"]
    assert ["#SBATCH --array=0-2" in Path(c).read_text() for c in calls] == [True, True, False]
    assert "#SBATCH --array=0\n" in Path(calls[2]).read_text()
    handle = last_handle(slurm_shell)
    table = handle.table()
    assert list(table["label"]) == [b * a for a, b in zip(range(1, 8), "abcdefg", strict=True)]
    assert set(table["state"]) == {"COMPLETED"}
    # after a kernel restart the folder gives the same sweep back
    from hpc_magics.attach import attach
    from hpc_magics.sweep_handle import SweepHandle

    again = attach(handle.folder.path.name, magics_of(slurm_shell).jobs_root)
    assert isinstance(again, SweepHandle) and again.array_ids() == handle.array_ids()
    assert list(again.table(ask=False)["label"]) == list(table["label"])


def _queue_state(job_id: str) -> tuple[str, str]:
    answer = commands.run(["squeue", "-h", "-j", job_id, "-o", "%T|%r"], timeout=10)
    state, _, reason = answer.stdout.strip().partition("|")
    return state, reason


def _sacct_times(job_id: str) -> tuple[float, float]:
    answer = commands.run(["sacct", "-n", "-X", "-P", "-o", "Start,End", "-j", job_id],
                          timeout=10)
    start, _, end = answer.stdout.strip().splitlines()[0].partition("|")
    begun, ended = slurm_timestamp(start), slurm_timestamp(end)
    assert begun is not None and ended is not None, answer.stdout
    return begun, ended


@pytest.mark.timeout(240)
def test_dependent_job_waits_for_its_parent(slurm_shell: Any, sacct_state: Any) -> None:
    slurm_shell.run_cell_magic("sbatch", "--name parent", "import time\ntime.sleep(10)")
    slurm_shell.run_cell("import hpc_magics\nparent = hpc_magics.job()")
    parent = slurm_shell.user_ns["parent"]
    slurm_shell.run_cell_magic("sbatch", "-d afterok:parent --name child", "child_ran = True")
    child = last_handle(slurm_shell)
    assert f"#SBATCH --dependency=afterok:{parent.job_id}" in \
        (child.folder.path / "job.sh").read_text()
    sacct_state(parent.job_id, until={"RUNNING"}, timeout=60)
    deadline = time.monotonic() + 30
    while _queue_state(child.job_id) != ("PENDING", "Dependency"):
        assert time.monotonic() < deadline, _queue_state(child.job_id)
        time.sleep(0.5)
    assert sacct_state(parent.job_id, until={"COMPLETED"}, timeout=60) == "COMPLETED"
    assert child.wait(timeout=120) == "COMPLETED"
    sacct_state(child.job_id, until={"COMPLETED"}, timeout=20)
    _, parent_end = _sacct_times(parent.job_id)
    child_start, _ = _sacct_times(child.job_id)
    assert child_start >= parent_end


def test_dependency_spellings_in_the_script(slurm_shell: Any,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    slurm_shell.run_cell_magic("sbatch", "--name first", "one = 1")
    first = last_handle(slurm_shell)
    folder_name = first.folder.path.name
    slurm_shell.run_cell_magic("sbatch", "--dry-run -d "
                               f"afterok:12345:12346,afterany:{folder_name}:12347+5", "two = 2")
    out = capsys.readouterr().out
    assert f"#SBATCH --dependency=afterok:12345:12346,afterany:{first.job_id}:12347+5\n" in out
    # sbatch's own spelling, as a #SBATCH line of the cell, is understood too
    slurm_shell.run_cell_magic("sbatch", "--dry-run", "#SBATCH -d afterany:777\nthree = 3")
    assert "#SBATCH --dependency=afterany:777\n" in capsys.readouterr().out
    with pytest.raises(UsageError, match=r"-d \.\.\.:nosuchjob: not a job id"):
        slurm_shell.run_cell_magic("sbatch", "-d afterok:nosuchjob", "four = 4")
    first.cancel()


@pytest.mark.parametrize(("line", "message"), [
    ("--sweep lr", "--sweep 'lr' has no '='"),
    ("--sweep lr=", "--sweep 'lr=' has no values"),
    ("--sweep lr=1,2 --sweep lr=3", "--sweep lr is given twice"),
    ("--sweep-from missing", "the notebook has no variable 'missing'"),
    ("--sweep-from number", "--sweep-from number is a int"),
    ("--sweep-from empty", "--sweep-from empty is empty"),
    ("--sweep-from ragged", "its lists have different lengths"),
    ("--sweep lr=1,2 --array-parallelism 0", "--array-parallelism '0' must be"),
])
def test_bad_sweeps_are_one_line_before_submitting(slurm_shell: Any, job_folders: Any,
                                                   line: str, message: str) -> None:
    slurm_shell.user_ns.update(number=3, empty=[], ragged={"a": [1, 2], "b": [1]})
    with pytest.raises(UsageError, match=message) as raised:
        slurm_shell.run_cell_magic("sbatch", line, "loss = lr * 2")
    assert "\n" not in str(raised.value)
    assert job_folders(slurm_shell) == []


def test_jobs_per_user_limit_is_named_before_submitting(slurm_shell: Any, job_folders: Any,
                                                        fresh_limits: None) -> None:
    """FAKE limit: the shared cluster enforces no MaxSubmitJobs (and its accounting must not
    change under the other engineers), so the limit is put in the cache sacctmgr fills."""
    limits.remember("submit_limit:", (4, "MaxSubmitJobs of your association with account "
                                         "hpcproj"))
    with pytest.raises(UsageError) as raised:
        slurm_shell.run_cell_magic("sbatch", "--sweep lr=1,2,3,4,5", "loss = lr * 2")
    text = str(raised.value)
    assert "the sweep has 5 tasks" in text and "limit of 4 jobs per user" in text
    assert "MaxSubmitJobs" in text and "--array-parallelism does not change that" in text
    assert job_folders(slurm_shell) == []


def test_a_sweep_without_slurm_is_refused_before_any_folder(shell: Any,
                                                            job_folders: Any) -> None:
    with pytest.raises(UsageError, match="--sweep runs a Slurm job array: there is no Slurm"):
        shell.run_cell_magic("sbatch", "--backend local --sweep x=1,2", "y = x + 1")
    assert job_folders(shell) == []


def test_the_dry_run_shows_the_array_line(slurm_shell: Any, job_folders: Any,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    slurm_shell.run_cell_magic("sbatch", "--dry-run --sweep lr=0.1,0.01 --sweep opt=adam,sgd "
                                         "--array-parallelism 3", "loss = lr")
    out = capsys.readouterr().out
    assert "# a sweep of 4 tasks as 1 job array; first point: {'lr': 0.1, 'opt': 'adam'}" in out
    assert "#SBATCH --array=0-3%3\n" in out and "%A_%a_0_log.out" in out
    assert job_folders(slurm_shell) == []


def test_without_pandas_the_table_is_a_list_of_dicts(monkeypatch: pytest.MonkeyPatch) -> None:
    """pandas is installed here: hiding it from the import system stands in for its absence."""
    from hpc_magics.sweep_handle import as_table

    rows = [{"lr": 0.1, "loss": 2.0, "state": "COMPLETED"}, {"lr": 0.2, "state": "FAILED"}]
    monkeypatch.setitem(sys.modules, "pandas", None)
    assert as_table(rows, ["lr", "loss", "state"]) == [
        {"lr": 0.1, "loss": 2.0, "state": "COMPLETED"},
        {"lr": 0.2, "loss": None, "state": "FAILED"}]


def test_a_split_sweep_refused_halfway_keeps_what_was_submitted(
        slurm_shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        fresh_limits: None) -> None:
    """FAKES: a MaxArraySize of 2 (the shared cluster's is 1001), and an sbatch wrapper that
    refuses its second call (a real controller does not refuse the second of two arrays on
    demand)."""
    real = shutil.which("sbatch")
    wrappers = tmp_path / "refusing bin"
    wrappers.mkdir()
    calls = tmp_path / "calls"
    wrapper = wrappers / "sbatch"
    wrapper.write_text(
        f'#!/bin/bash\necho x >> "{calls}"\n'
        f'if [ "$(wc -l < "{calls}")" -ge 2 ]; then\n'
        '  echo "sbatch: error: Batch job submission failed: fake refusal" >&2; exit 1\nfi\n'
        f'exec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrappers}{os.pathsep}{os.environ['PATH']}")
    limits.remember("max_array_size", 2)
    with pytest.raises(UsageError, match=r"1 of 2 arrays of the sweep were submitted \(\d+\), "
                                         r"then: the scheduler refused the job: Batch job "
                                         r"submission failed: fake refusal") as raised:
        slurm_shell.run_cell_magic("sbatch", "--sweep x=1,2,3 --name halfway", "y = x")
    meta = json.loads(next(magics_of(slurm_shell).jobs_root.glob("halfway-*/meta.json"))
                      .read_text())
    assert meta["state"] != "NOT_SUBMITTED" and meta["job_id"] in str(raised.value)
    commands.run(["scancel", meta["job_id"]], timeout=30)


def test_task_files_decide_when_slurm_cannot_say(slurm_cluster: Any, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A sweep folder recorded on another cluster: the watcher asks this one nothing about it,
    and the tasks' own files decide (written by the real task runner, run here in turn)."""
    import pickle

    from hpc_magics.backends import get_backend
    from hpc_magics.jobfolder.folder import JobFolder
    from hpc_magics.jobfolder.tasks import PAYLOAD_FILE, POINTS_FILE
    from hpc_magics.node.runner import run_task
    from hpc_magics.shipping.analysis import analyse
    from hpc_magics.shipping.packing import pack
    from hpc_magics.sweep_handle import SweepHandle

    folder = JobFolder.create(tmp_path / "jobs", "elsewhere")
    code = "y = 10 // x\n"
    (folder.path / PAYLOAD_FILE).write_bytes(pickle.dumps(pack(code, analyse(code), {})))
    points = [{"x": 1}, {"x": 0}, {"x": 5}]
    (folder.path / POINTS_FILE).write_bytes(pickle.dumps(points))
    folder.write_meta({"name": "elsewhere", "backend": "slurm", "kind": "sweep",
                       "job_id": "777", "cluster": "another-cluster", "results": ["y"],
                       "sweep": {"count": 3, "parameters": ["x"], "arrays": [
                           {"job_id": "777", "indices": [[0, 3]], "attempt": 0}]}})
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "777")
    for index, point in enumerate(points):
        monkeypatch.setenv("SLURM_ARRAY_TASK_ID", str(index))
        try:
            run_task(str(folder.path), index, point)
        except ZeroDivisionError:
            assert index == 1
    table = SweepHandle("777", get_backend("slurm"), folder, "elsewhere").table()
    assert list(table["state"]) == ["COMPLETED", "FAILED", "COMPLETED"]
    assert table["y"][0] == 10 and table["y"][2] == 2
    assert "ZeroDivisionError" in table["error"][1] and table["error"][0] == ""
    assert all(elapsed > 0 for elapsed in table["elapsed"])  # from each task's outcome.json
    # one damaged task file (cut short, as a full disk leaves it): its row says so, the
    # others still show
    results = folder.path / "tasks" / "00002" / "results.pkl"
    results.write_bytes(results.read_bytes()[:20])
    table = SweepHandle("777", get_backend("slurm"), folder, "elsewhere").table()
    assert table["y"][0] == 10 and table["error"][2].startswith("damaged: "), table["error"][2]
    assert "ZeroDivisionError" in table["error"][1]
