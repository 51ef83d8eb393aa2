"""``%hpc_submit_notebook --dry-run``: the job script the submission itself would write, and
what the job runs, with nothing submitted and no job folder made; on the local backend and
on the host's real Slurm test cluster (its submissions are one tiny job, cancelled at once).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

WOULD_BE = re.compile(r"^# dry run: nothing submitted\. The job folder would be (.+) \(its time")


def _notebook(folder: Path) -> Path:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    path = folder / "look.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1"), new_code_cell("print(x)")],
                                metadata={"kernelspec": {"name": "python3", "language": "python",
                                                         "display_name": "Python 3"}}), path)
    return path


def _dry_run(shell: Any, line: str, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """The dry run's output, and the job folder it says the job would get."""
    capsys.readouterr()
    assert shell.run_line_magic("hpc_submit_notebook", f"{line} --dry-run") is None
    out = capsys.readouterr().out
    found = WOULD_BE.match(out)
    assert found, out
    return out, found.group(1)


def _matches_a_real_submission(shell: Any, line: str, out: str, would_be: str) -> Any:
    """Submit for real with the same line: its job.sh is the dry run's script, its job.py
    runs the code the dry run named, once the folder's real name replaces the placeholder
    (the name alone: the jobs folder's hostile name is quoted in the script)."""
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    shell.run_line_magic("hpc_submit_notebook", line)
    handle = magics.handles[magics.last_job]
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
        shell: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _notebook(tmp_path)
    jobs_root = Path(shell.magics_manager.registry["HpcMagicsKernel"].jobs_root)
    line = f"{path} --backend local -t 5 -J preview"
    out, would_be = _dry_run(shell, line, capsys)
    assert would_be == f"{jobs_root}/preview-YYYYMMDD-HHMMSS-XXXX"
    assert "#!/bin/bash\n# Ran on this machine through submitit's local executor" in out
    assert "stops the job after 5 min" in out
    assert "# the job runs the notebook look.ipynb (2 cells, kernel python3)" in out
    assert f"as {would_be}/executed.ipynb" in out
    assert not jobs_root.exists(), "a dry run made the jobs folder"
    assert shell.magics_manager.registry["HpcMagicsKernel"].last_job is None

    handle = _matches_a_real_submission(shell, line, out, would_be)
    handle.cancel()
    assert handle.wait(timeout=60) in {"CANCELLED", "COMPLETED", "FINISHED"}


def test_slurm_dry_run_shows_the_submissions_job_sh(
        slurm_cluster: Any, shell: Any, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    path = _notebook(tmp_path)
    jobs_root = Path(shell.magics_manager.registry["HpcMagicsKernel"].jobs_root)
    line = f"{path} --backend slurm --profile {slurm_cluster.profile} -t 1 -c 1"
    out, would_be = _dry_run(shell, line, capsys)
    assert "#SBATCH --time=00:01:00\n" in out and "#SBATCH --job-name=look\n" in out
    assert re.search(r"^# the notebook's world: kernel 'python3': ", out, re.M), out
    assert not jobs_root.exists(), "a dry run made the jobs folder"

    handle = _matches_a_real_submission(shell, line, out, would_be)
    handle.cancel()  # the comparison is all this test needs of the shared cluster
    assert handle.wait(timeout=120) in {"CANCELLED", "COMPLETED"}


def test_a_dry_run_is_not_refused_while_the_controller_is_silent(
        slurm_cluster: Any, shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
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
    jobs_root = Path(shell.magics_manager.registry["HpcMagicsKernel"].jobs_root)
    line = f"{path} --backend slurm --profile {slurm_cluster.profile} -t 1"
    with pytest.raises(UsageError, match="controller does not answer"):
        shell.run_line_magic("hpc_submit_notebook", line)
    folders = set(jobs_root.iterdir()) if jobs_root.exists() else set()
    out, _ = _dry_run(shell, line, capsys)
    assert "#SBATCH --time=00:01:00\n" in out
    assert (set(jobs_root.iterdir()) if jobs_root.exists() else set()) == folders


@pytest.mark.parametrize(("flags", "expect"), [
    ("-t forever", ["'forever'", "HH:MM:SS"]),
    ("--profile nosuchcluster", ["nosuchcluster"]),
])
def test_bad_input_in_a_dry_run_is_one_line(shell: Any, tmp_path: Path, flags: str,
                                           expect: list[str]) -> None:
    path = _notebook(tmp_path)
    with pytest.raises(UsageError) as refused:
        shell.run_line_magic("hpc_submit_notebook", f"{path} --backend local {flags} --dry-run")
    message = str(refused.value).strip()
    assert "\n" not in message and all(part in message for part in expect), message
    assert not Path(shell.magics_manager.registry["HpcMagicsKernel"].jobs_root).exists()
