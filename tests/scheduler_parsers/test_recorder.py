"""scripts/record-slurm-output refuses a release its cluster does not run, before it
submits or deletes anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hpc_magics.scheduler import commands

if TYPE_CHECKING:
    from conftest import SlurmCluster

RECORDER = Path(__file__).resolve().parent.parent.parent / "scripts" / "record-slurm-output"


def test_a_release_the_cluster_does_not_run_is_refused(slurm_cluster: SlurmCluster,
                                                       tmp_path: Path) -> None:
    kept = tmp_path / "99.99" / "manifest.json"
    kept.parent.mkdir()
    kept.write_text("{}")
    done = subprocess.run([sys.executable, str(RECORDER), "--release", "99.99", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False,
                          env=commands.scrubbed_environment())
    assert done.returncode != 0
    assert "--release 99.99 but this cluster runs Slurm" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert kept.read_text() == "{}"  # nothing replaced
