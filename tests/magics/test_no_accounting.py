"""A cluster that keeps no accounting (``AccountingStorageType=accounting_storage/none``):
a job's segments say so, not "try again later", which never helps there.

The Slurm here is a fake (two shell scripts answering as such a cluster does): the test
clusters keep accounting and cannot drop it on demand."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hpc_magics.backends import get_backend
from hpc_magics.core.errors import HpcMagicsError
from hpc_magics.handle import JobHandle
from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.scheduler import cluster

SAYS = {
    "scontrol": "echo 'AccountingStorageType   = {storage}'",
    "sacct": "echo 'sacct: error: Problem talking to the database: Connection refused' >&2\n"
             "exit 1",
    "sbatch": "exit 1",  # there: the backend is Slurm's; nothing is submitted
}


@pytest.fixture
def slurm_keeping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                  ) -> Iterator[Callable[[str], None]]:
    def keeping(storage: str) -> None:
        bin_dir = tmp_path / storage.replace("/", "-")
        bin_dir.mkdir()
        for name, body in SAYS.items():
            (bin_dir / name).write_text(f"#!/bin/sh\n{body.format(storage=storage)}\n")
            (bin_dir / name).chmod(0o755)
        monkeypatch.setenv("PATH", str(bin_dir))  # only the fake: never the real cluster's
        cluster.config_text.cache_clear()

    yield keeping
    cluster.config_text.cache_clear()


@pytest.mark.parametrize(("storage", "said", "not_said"), [
    ("accounting_storage/none", "which this cluster does not keep", "try again"),
    ("accounting_storage/slurmdbd", "slurmdbd unreachable): try again later", "does not keep"),
])
def test_segments_say_whether_asking_again_can_help(
        tmp_path: Path, slurm_keeping: Callable[[str], None], storage: str, said: str,
        not_said: str) -> None:
    slurm_keeping(storage)
    folder = JobFolder.create(tmp_path / "jobs", "cell-1")
    handle = JobHandle("4242", get_backend("slurm"), folder)
    with pytest.raises(HpcMagicsError) as refused:
        handle.segments()
    message = str(refused.value)
    assert "job 4242's segments" in message and said in message, message
    assert not_said not in message and "\n" not in message, message
