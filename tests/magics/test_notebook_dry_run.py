"""``hpc-magics submit --dry-run``: the job script the submission itself would write, and
what the job runs, with nothing submitted and no job folder made; on the local backend and
on the host's real Slurm test cluster (its submissions are one tiny job, cancelled at once).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.attach import attach
from hpc_magics.cli import main

WOULD_BE = re.compile(r"^# dry run: nothing submitted\. The job folder would be (.+) \(its time")


def _notebook(folder: Path) -> Path:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    path = folder / "look.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1"), new_code_cell("print(x)")],
                                metadata={"kernelspec": {"name": "python3", "language": "python",
                                                         "display_name": "Python 3"}}), path)
    return path


@pytest.fixture
def jobs_root(tmp_path: Path) -> Path:
    return tmp_path / "my jobs 'quoted'"  # hostile folder name on purpose


def _submit(line: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """``hpc-magics submit LINE``: its exit code, output and error output."""
    capsys.readouterr()
    code = main(["submit", *shlex.split(line)])
    said = capsys.readouterr()
    return code, said.out, said.err.strip()


def _dry_run(line: str, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """The dry run's output, and the job folder it says the job would get."""
    code, out, err = _submit(f"{line} --dry-run", capsys)
    assert code == 0, err
    found = WOULD_BE.match(out)
    assert found, out
    return out, found.group(1)


def _matches_a_real_submission(line: str, jobs_root: Path, out: str, would_be: str,
                               capsys: pytest.CaptureFixture[str]) -> Any:
    """Submit for real with the same line: its job.sh is the dry run's script, its job.py
    runs the code the dry run named, once the folder's real name replaces the placeholder
    (the name alone: the jobs folder's hostile name is quoted in the script)."""
    code, said, err = _submit(line, capsys)
    assert code == 0, err
    handle = attach(said.split()[2], jobs_root)  # "submitted job ID (BACKEND): FOLDER"
    real = handle.folder.path
    assert real.parent == Path(would_be).parent
    shown = out.replace(Path(would_be).name, real.name)
    written = (handle.folder.path / "job.sh").read_text()
    script = shown[shown.index("#!/bin/bash"):shown.index("# the job runs the notebook")]
    assert script == written
    code = [line.removeprefix("#   ") for line in shown.splitlines()[-2:]]
    assert code[1].startswith("run_notebook_job(") and str(real) in code[1]
    job_py = (handle.folder.path / "job.py").read_text()
    assert all(f"{line}\n" in job_py for line in code), job_py
    return handle


def test_local_dry_run_shows_the_submissions_job_sh_and_creates_nothing(
        jobs_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _notebook(tmp_path)
    line = f"{shlex.quote(str(path))} --backend local -t 5 -J preview " \
           f"--jobs-dir {shlex.quote(str(jobs_root))}"
    out, would_be = _dry_run(line, capsys)
    assert would_be == f"{jobs_root}/preview-YYYYMMDD-HHMMSS-XXXX"
    assert "#!/bin/bash\n# Runs on this machine through submitit's local executor" in out
    assert "stops the job after 5 min" in out
    assert "# the job runs the notebook look.ipynb (2 cells, kernel python3)" in out
    assert f"as {would_be}/executed.ipynb" in out
    assert not jobs_root.exists(), "a dry run made the jobs folder"

    handle = _matches_a_real_submission(line, jobs_root, out, would_be, capsys)
    handle.cancel()
    assert handle.wait(timeout=60) in {"CANCELLED", "COMPLETED", "FINISHED"}


def test_local_dry_run_says_what_will_run_and_no_time_limit_when_none_is_asked(
        jobs_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing has run yet, a notebook is not a cell, and without -t there is no limit
    (not the executor's year of minutes)."""
    path = _notebook(tmp_path)
    out, _ = _dry_run(f"{shlex.quote(str(path))} --backend local "
                      f"--jobs-dir {shlex.quote(str(jobs_root))}", capsys)
    header = out[out.index("#!/bin/bash"):out.index("# the job runs the notebook")]
    assert "no time limit" in header and "525600" not in header
    assert not re.search(r"\b(ran|started)\b|the cell", header), header


def test_slurm_dry_run_shows_the_submissions_job_sh(
        slurm_cluster: Any, jobs_root: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    path = _notebook(tmp_path)
    line = f"{shlex.quote(str(path))} --backend slurm --profile {slurm_cluster.profile} " \
           f"-t 1 -c 1 --jobs-dir {shlex.quote(str(jobs_root))}"
    out, would_be = _dry_run(line, capsys)
    assert "#SBATCH --time=00:01:00\n" in out and "#SBATCH --job-name=look\n" in out
    assert re.search(r"^# the notebook's world: kernel 'python3': ", out, re.M), out
    assert not jobs_root.exists(), "a dry run made the jobs folder"

    handle = _matches_a_real_submission(line, jobs_root, out, would_be, capsys)
    handle.cancel()  # the comparison is all this test needs of the shared cluster
    assert handle.wait(timeout=120) in {"CANCELLED", "COMPLETED"}


def test_a_dry_run_is_not_refused_while_the_controller_is_silent(
        slurm_cluster: Any, jobs_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A stand-in ``squeue`` fails as the real one does while slurmctld is away (only the
    drills stop it, and those never run beside other tests); the real submission is refused,
    the dry run still shows the script."""
    from server.test_queue import FakeSqueue  # the suite's stand-in squeue

    from hpc_magics.scheduler import watcher as watcher_module
    from hpc_magics.scheduler.queue import JobQueue

    squeue = FakeSqueue(tmp_path / "bin", monkeypatch)
    squeue.behave("fail")
    silent = watcher_module.Watcher(queue=JobQueue(cache_dir=tmp_path / "runtime",
                                                   answer_within_s=2.0))
    monkeypatch.setattr(watcher_module, "_WATCHER", silent)
    assert silent.queue.view(max_age_s=0).error is not None
    path = _notebook(tmp_path)
    line = f"{shlex.quote(str(path))} --backend slurm --profile {slurm_cluster.profile} " \
           f"-t 1 --jobs-dir {shlex.quote(str(jobs_root))}"
    code, _, err = _submit(line, capsys)
    assert code == 2 and "controller does not answer" in err, err
    folders = set(jobs_root.iterdir()) if jobs_root.exists() else set()
    out, _ = _dry_run(line, capsys)
    assert "#SBATCH --time=00:01:00\n" in out
    assert (set(jobs_root.iterdir()) if jobs_root.exists() else set()) == folders


@pytest.mark.parametrize(("flags", "expect"), [
    ("-t forever", ["'forever'", "HH:MM:SS"]),
    ("--profile nosuchcluster", ["nosuchcluster"]),
])
def test_bad_input_in_a_dry_run_is_one_line(jobs_root: Path, tmp_path: Path, flags: str,
                                           expect: list[str],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = _notebook(tmp_path)
    code, _, message = _submit(f"{shlex.quote(str(path))} --backend local {flags} --dry-run "
                               f"--jobs-dir {shlex.quote(str(jobs_root))}", capsys)
    assert code == 2 and "\n" not in message, message
    assert all(part in message for part in expect), message
    assert not jobs_root.exists()
