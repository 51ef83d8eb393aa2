"""A kernel that started local jobs exits quietly. At the interpreter's exit a module's
names are None before the jobs it still holds are freed: the job's clean-up then printed a
TypeError (submitit's names gone) and, after a first fix, an AttributeError (ours). The
exit itself is not reproducible on demand (it depends on the order of the teardown), so
the test puts the module in that state by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hpc_magics.backends import local_process
from hpc_magics.backends.local_process import LocalProcessJob


def test_a_local_jobs_clean_up_needs_no_module_name(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait(timeout=30)
    job = LocalProcessJob(folder=tmp_path, job_id=str(process.pid), process=process, tasks=[0])
    monkeypatch.setattr(local_process, "sys", None)  # as the teardown leaves the module
    job.__del__()  # raises nothing: the test fails on any exception
