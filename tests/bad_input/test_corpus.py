"""The bad-input corpus (cases.toml): each case is one line naming the value and the fix,
and nothing reaches the scheduler.

Cases run in a real IPython shell against the real test cluster, with a counting ``sbatch``
first on PATH (it logs, then runs the real one); the last test checks that log and asks
``sacct`` for any job of this run's unique name prefix.
"""

from __future__ import annotations

import os
import secrets
import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tomllib
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from hpc_magics.core.errors import HpcMagicsError
from hpc_magics.core.resources import ResourceRequest
from hpc_magics.scheduler import commands

CASES: list[dict[str, Any]] = tomllib.loads(
    (Path(__file__).with_name("cases.toml")).read_text(encoding="utf-8"))["case"]
RUN = f"badinput-{secrets.token_hex(3)}"  # this run's job names start with it
STARTED = time.strftime("%Y-%m-%dT%H:%M:%S")

pytestmark = pytest.mark.timeout(120)


def test_the_corpus_is_big_and_well_formed() -> None:
    ids = [case["id"] for case in CASES]
    assert len(ids) >= 60 and len(set(ids)) == len(ids)
    assert all(case.get("expect") for case in CASES), "every case names what it expects"


@pytest.fixture(scope="module")
def counting_sbatch(tmp_path_factory: pytest.TempPathFactory, slurm_cluster: object
                    ) -> Iterator[Path]:
    """An ``sbatch`` first on PATH that logs every call, then runs the real one."""
    folder = tmp_path_factory.mktemp("bin")
    log = folder / "sbatch-calls.log"
    real = commands.run(["sh", "-c", "command -v sbatch"], timeout=10).stdout.strip()
    wrapper = folder / "sbatch"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {shlex.quote(str(log))}\n'
                       f'exec {shlex.quote(real)} "$@"\n')
    wrapper.chmod(0o755)
    saved = os.environ["PATH"]
    os.environ["PATH"] = f"{folder}:{saved}"
    yield log
    os.environ["PATH"] = saved


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counting_sbatch: Path
          ) -> Iterator[Any]:
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "hpc_magics")
    magics = ip.magics_manager.registry["HpcMagicsKernel"]
    magics.jobs_dir = str(tmp_path / "jobs")
    magics.request = ResourceRequest(profile="generic")
    magics.handles.clear()
    magics.last_job = None
    saved_limit = magics.max_shipped_mb
    monkeypatch.setenv("JPY_SESSION_NAME", f"{RUN}.ipynb")  # default job names
    monkeypatch.setenv("HPC_MAGICS_PROFILE_PATH", str(tmp_path / "profiles"))
    monkeypatch.chdir(tmp_path)
    saved = dict(ip.user_ns)
    yield ip
    magics.max_shipped_mb = saved_limit
    ip.user_ns.clear()
    ip.user_ns.update(saved)


def _notebook(folder: Path) -> Path:
    import nbformat

    path = folder / "tiny notebook.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), path)
    return path


def _run_case(ip: Any, case: dict[str, Any], tmp_path: Path,
              capsys: pytest.CaptureFixture[str]) -> str:
    """Run the case; return the error message it produced (fails if there was none)."""
    magics = ip.magics_manager.registry["HpcMagicsKernel"]
    if "profile" in case or "profile_hex" in case:
        folder = tmp_path / "profiles"
        folder.mkdir()
        (folder / "broken.toml").write_bytes(
            bytes.fromhex(case["profile_hex"]) if "profile_hex" in case
            else case["profile"].encode())
    if "setup_file" in case:
        (tmp_path / case["setup_file"]).write_text("in the way")
    if "jobs_dir" in case:
        magics.jobs_dir = str(tmp_path / case["jobs_dir"])
    if "max_shipped_mb" in case:
        magics.max_shipped_mb = case["max_shipped_mb"]
    if "setup" in case:
        ip.ex(case["setup"])
    line = case.get("line", "")
    magic = case["magic"]
    try:
        if magic == "sbatch":
            ip.run_cell_magic("sbatch", line, case.get("cell", "x = 1"))
        elif magic == "job":
            import hpc_magics

            hpc_magics.job(line)
        elif magic == "cli":
            return _run_cli(line, tmp_path, capsys)
        else:
            ip.run_line_magic(magic, line)
    except (UsageError, HpcMagicsError) as error:
        return str(error)
    pytest.fail(f"case {case['id']} raised nothing", pytrace=False)


def _run_cli(line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    from hpc_magics.cli import main

    not_a_notebook = tmp_path / "notes.ipynb"
    not_a_notebook.write_text("these are notes, not JSON")
    argv = [arg.format(notebook=_notebook(tmp_path), not_a_notebook=not_a_notebook)
            for arg in shlex.split(line)]
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exit_:  # argparse's own refusals
        code = exit_.code
    lines = [text for text in capsys.readouterr().err.splitlines() if text.strip()]
    assert code not in (0, None), f"hpc-magics {line} succeeded"
    assert lines, f"hpc-magics {line} failed without saying why"
    return lines[-1]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_bad_input_is_one_line_naming_the_value_and_the_fix(
        case: dict[str, Any], shell: Any, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    message = _run_case(shell, case, tmp_path, capsys)
    assert "\n" not in message.strip(), f"more than one line: {message!r}"
    missing = [part for part in case["expect"] if part not in message]
    assert not missing, f"{message!r} lacks {missing}"
    assert time.monotonic() - started < 30  # refused at once, never after a wait


def test_nothing_was_submitted(counting_sbatch: Path, slurm_cluster: object) -> None:
    """One check for the whole table: no sbatch call, and sacct knows no job of this run."""
    calls = counting_sbatch.read_text() if counting_sbatch.exists() else ""
    assert calls == "", f"sbatch was called:\n{calls}"
    user = commands.run([sys.executable, "-c", "import getpass; print(getpass.getuser())"],
                        timeout=10).stdout.strip()
    answer = commands.run(["sacct", "-n", "-X", "-P", "-u", user, "-S", STARTED,
                           "-o", "JobID,JobName"], timeout=30)
    assert answer.ok, answer.first_error_line()
    ours = [line for line in answer.stdout.splitlines() if RUN in line]
    assert ours == [], f"jobs of this corpus run reached Slurm: {ours}"
