"""Bad output from a job: bytes that are not UTF-8, and more output than a notebook can
show. Fetching shows what it can (undecodable bytes replaced, a huge output's tail after
one line saying where all of it is) and the results still arrive."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from hpc_magics.core.resources import ResourceRequest

pytestmark = [pytest.mark.timeout(180), pytest.mark.slurm]

NOT_UTF8 = ("import sys\nsys.stdout.flush()\n"
            "sys.stdout.buffer.write(b'latin-1 caf\\xe9 and a stray \\xff byte\\n')\n"
            "sys.stdout.buffer.flush()\nanswer = 1")
HUGE = "for i in range(60_000):\n    print(f'line {i:06d} ' + 'x' * 40)\nanswer = 2"


@pytest.fixture
def shell(tmp_path: Path, slurm_cluster: object) -> Iterator[Any]:
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "hpc_magics")
    magics = ip.magics_manager.registry["HpcMagicsKernel"]
    saved = magics.jobs_dir
    magics.jobs_dir = str(tmp_path / "jobs")
    magics.request = ResourceRequest(profile="lab", backend="slurm", time_s=300)
    magics.handles.clear()
    yield ip
    magics.jobs_dir = saved


def test_output_that_is_not_utf8(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell_magic("sbatch", "--wait", NOT_UTF8)
    shown = capsys.readouterr().out
    assert "latin-1 caf\ufffd and a stray \ufffd byte" in shown
    assert shell.user_ns["answer"] == 1


def test_output_too_big_for_a_notebook(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell_magic("sbatch", "--wait", HUGE)
    shown = capsys.readouterr().out
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    output = magics.handles[magics.last_job].folder.path / "output.txt"
    assert output.stat().st_size > 2_000_000
    assert f"here are its last 1 MB; all of it is in {output}" in shown
    assert "line 059999" in shown and "line 000000" not in shown
    assert len(shown) < 1_100_000
    assert shell.user_ns["answer"] == 2
