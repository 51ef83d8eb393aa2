"""On each --release cluster (hosts apart, cgroups enforcing), the notebook's view of a
confined job: tests/magics/test_cgroup_facts.py run on the release's login host as the
test user, where none of its tests may skip: a cell over its --mem says OUT_OF_MEMORY in
one line; a short cell's memory peak comes from the node; every node samples its GPUs.

The compute nodes see only /home and the clone that brought the cluster up: this clone's
``hpc_magics`` is copied to a folder in the test user's home (a shared file system, as
on a site) and put first on PYTHONPATH, so the jobs run the code under test.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from test_release_clusters import (
    RELEASES,
    REPO_ROOT,
    TEST_USER,
    _ids,
    cluster_script,
    login_pytest,
    shared_dir,
    wanted_releases,
)

__all__ = ["shared_dir"]  # the fixture

FACTS_TESTS = "tests/magics/test_cgroup_facts.py"
pytestmark = pytest.mark.slurm


@pytest.fixture(params=RELEASES)
def release_login(request: pytest.FixtureRequest) -> str:
    """A release whose login host answers (``status`` works only from the clone that
    brought the cluster up; ``exec`` from any clone, so it is the probe here)."""
    name: str = request.param
    if os.environ.get("HPC_MAGICS_RELEASE") or name not in wanted_releases():
        pytest.skip(f"release {name}: not tried from here (inside a release, or not in "
                    "HPC_MAGICS_RELEASES)")
    if os.geteuid() != 0 and subprocess.run(
            ["sudo", "-n", "-l", str(REPO_ROOT / "scripts" / "slurm-cluster")],
            capture_output=True, timeout=30, check=False).returncode != 0:
        pytest.skip("needs root or the sudo rule of scripts/run-tests")
    if cluster_script(name, "exec", "--", "sinfo", "-h").returncode != 0:
        pytest.skip(f"release {name}'s cluster is not up: run "
                    f"`scripts/slurm-cluster --release {name} up` as root")
    return name


def test_confined_jobs_as_the_notebook_sees_them(release_login: str, shared_dir: Path) -> None:
    source = shared_dir / "src"
    shutil.copytree(REPO_ROOT / "hpc_magics", source / "hpc_magics",
                    ignore=shutil.ignore_patterns("__pycache__"))
    if os.geteuid() == 0:
        uid, gid = _ids(TEST_USER)
        for path in [source, *source.rglob("*")]:
            os.chown(path, uid, gid)
    user = ["--user", TEST_USER] if os.geteuid() == 0 else []
    done = cluster_script(
        release_login, "exec", *user, "--", "env", f"PYTHONPATH={source}",
        *login_pytest(shared_dir, FACTS_TESTS), "-rs", cwd=shared_dir)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    # every test of the file passed there: none skipped (as on the host), none left out
    tests_there = (REPO_ROOT / FACTS_TESTS).read_text().count("\ndef test_")
    assert re.fullmatch(rf"{tests_there} passed(, \d+ warnings?)? in [\d.]+s( \([\d:]+\))?",
                        said.rstrip().splitlines()[-1]), said
