"""No silent change of where code runs (issue 20): ``--backend auto`` says when it runs on
this machine and why; a local job starts in its own process group through the subprocess
door, and a cancel ends the whole group without a traceback in the notebook."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest


def test_auto_says_it_runs_here_when_sbatch_is_missing(
        shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    bare = tmp_path / "bin"  # a PATH with Python but no Slurm commands, as on a laptop
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))
    assert shutil.which("sbatch") is None
    shell.run_cell_magic("sbatch", "--backend auto --wait -t 5", "where = 'here'\n")
    assert shell.user_ns["where"] == "here"
    err = capsys.readouterr().err
    assert ("[hpc_magics] --backend auto: running on this machine, not on a cluster: sbatch is "
            "not on PATH here (--backend slurm refuses instead)") in err


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state == "Z"  # ended, not yet reaped by its parent


def test_cancel_ends_the_process_group_without_a_traceback(
        shell: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    pid_file = tmp_path / "child.pid"
    shell.run_cell_magic("sbatch", "--backend local -t 5", "\n".join([
        "import subprocess, time",
        "child = subprocess.Popen(['sleep', '300'])",  # a child the cell leaves running
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))",
        "time.sleep(300)"]))
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    controller = int(handle.job_id)
    assert os.getpgid(controller) == controller != os.getpgid(0)  # a group of its own
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the cell never started"
        time.sleep(0.2)
    child = int(pid_file.read_text())
    capfd.readouterr()
    shell.run_line_magic("hpc_cancel", handle.job_id)
    assert handle.wait(timeout=30) == "CANCELLED"
    deadline = time.monotonic() + 15  # SIGTERM, then SIGKILL after commands.STOP_GRACE_S
    while not (_gone(child) and _gone(controller)):
        assert time.monotonic() < deadline, "the job's process group outlived the cancel"
        time.sleep(0.2)
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "KeyboardInterrupt" not in out + err
    assert (handle.folder.path / "controller.log").exists()
