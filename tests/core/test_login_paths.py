"""What a compute node cannot see of the login host: the one-line refusals before submitting."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpc_magics.core import login_paths
from hpc_magics.core.errors import InvalidRequest, refuse


def refusals(cell: str = "", environ: dict[str, str] | None = None, **paths: object) -> list[str]:
    values: dict = {"jobs_root": "/home/u/hpc_jobs", "cwd": "/home/u", "stage": (),
                    "stage_back": None, **paths}
    return login_paths.refusals(cell=cell, environ=environ or {}, **values)


def test_shared_paths_pass() -> None:
    assert refusals(stage=["/home/u/data"], stage_back="/project/out",
                    cell="open('/home/u/x.txt')") == []


def test_each_login_only_path_is_one_line_naming_it(tmp_path: Path) -> None:
    written = Path("/tmp") / f"{tmp_path.name}-login.txt"
    written.write_text("1")
    try:
        found = refusals(jobs_root="/tmp/nb/hpc_jobs", cwd="/var/tmp/nb",
                         stage=["/dev/shm/data"], stage_back="/tmp/back",
                         cell=f"x = open('{written}').read()\n"
                              f"y = open(\"/tmp/absent-{tmp_path.name}\")")
    finally:
        written.unlink()
    named = ["/tmp/nb/hpc_jobs", "/var/tmp/nb", "--stage /dev/shm/data", "--stage-back /tmp/back",
             str(written)]
    assert len(found) == len(named)  # the absent /tmp file is the node's own business
    for line, name in zip(found, named, strict=True):
        assert name in line and "\n" not in line and "home or project folder" in line


def test_a_one_host_cluster_says_so() -> None:
    assert refusals(jobs_root="/tmp/j", environ={"HPC_MAGICS_NODES_SHARE_TMP": "1"}) == []


def test_the_refusal_names_every_path_at_once_in_one_line() -> None:
    """One round of fixes: the refusal before submitting is every problem found, in the
    one line ``core/errors.refuse`` makes (it named only the first before)."""
    with pytest.raises(InvalidRequest) as refused:
        refuse(refusals(jobs_root="/tmp/nb/hpc_jobs", cwd="/var/tmp/nb"))
    said = str(refused.value)
    assert said.startswith("2 problems: the job folder /tmp/nb/hpc_jobs") and "\n" not in said
    assert "; the working directory /var/tmp/nb is under /var/tmp" in said
