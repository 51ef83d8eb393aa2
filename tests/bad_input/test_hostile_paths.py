"""A jobs folder whose name holds spaces, quotes, shell metacharacters and Slurm's own
``%`` patterns is not bad input: the cluster takes it, so the job must run there, its logs
and results land in that very folder, and nothing in the name is ever executed."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from hpc_magics.core.resources import ResourceRequest

pytestmark = [pytest.mark.timeout(180), pytest.mark.slurm]

HOSTILE = "jobs $(touch pwned) `touch pwned2`; 'single' \"double\" %j %x 100%"


def test_a_job_runs_in_a_folder_with_a_hostile_name(tmp_path: Path, slurm_cluster: object,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "hpc_magics")
    magics = ip.magics_manager.registry["HpcMagicsKernel"]
    saved = magics.jobs_dir
    magics.jobs_dir = str(tmp_path / HOSTILE)
    magics.request = ResourceRequest(profile="lab", backend="slurm", time_s=300)
    magics.handles.clear()
    try:
        ip.run_cell_magic("sbatch", "--wait", "print('hello from the node')\nanswer = 7")
    finally:
        magics.jobs_dir = saved
    assert ip.user_ns["answer"] == 7
    handle = magics.handles[magics.last_job]
    assert handle.folder.path.parent == tmp_path / HOSTILE
    logs = sorted(p.name for p in handle.folder.path.glob(f"{handle.job_id}_0_log.*"))
    assert logs == [f"{handle.job_id}_0_log.err", f"{handle.job_id}_0_log.out"], logs
    assert "hello from the node" in (handle.folder.path / "output.txt").read_text()
    assert not list(tmp_path.rglob("pwned*")) and not list(Path("/").glob("pwned*"))
