"""``%load_ext`` looks for kernel jobs left behind without reading every kernel folder ever
made: a folder once found over is not read again (kernel/orphans.py). Real folders and a
real process that ended; no scheduler is asked (no candidate is left for squeue)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from hpc_magics.kernel.orphans import OVER_LIST, candidates, owner
from hpc_magics.scheduler.processes import started


def _kernel_folder(root: Path, name: str, **meta: Any) -> Path:
    folder = root / name
    folder.mkdir(mode=0o700)
    (folder / "meta.json").write_text(json.dumps({"kind": "kernel", "job_id": "12345",
                                                  "name": name, **meta}))
    return folder


def test_a_kernel_folder_found_over_is_not_read_again(tmp_path: Path) -> None:
    child = subprocess.Popen(["true"])
    gone_owner = {**owner(), "owner_pid": child.pid, "owner_started": started(child.pid)}
    child.wait(timeout=10)
    ended = _kernel_folder(tmp_path, "kernel-ended", state="CANCELLED", **gone_owner)
    running = _kernel_folder(tmp_path, "kernel-running", state="RUNNING", **gone_owner)
    assert [path for path, _ in candidates(tmp_path)] == [running]
    assert (tmp_path / OVER_LIST).read_text().split() == ["kernel-ended"]
    # were the ended folder read again, it would now be a candidate
    (ended / "meta.json").write_text(json.dumps({"kind": "kernel", "job_id": "12346",
                                                 "state": "RUNNING", **gone_owner}))
    assert [path for path, _ in candidates(tmp_path)] == [running]
    # a list another user could have written is not believed
    (tmp_path / OVER_LIST).unlink()
    (tmp_path / OVER_LIST).symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").write_text("kernel-ended\n")
    assert sorted(path for path, _ in candidates(tmp_path)) == [ended, running]
