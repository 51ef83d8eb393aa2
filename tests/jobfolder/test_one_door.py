"""A job's files are written by one atomic write and unpickled by one owner-checked loader
(``jobfolder/files.py``): no copy elsewhere in the package can drift from them."""

from __future__ import annotations

import os
import pickle
import re
import stat
from pathlib import Path

import pytest

import hpc_magics
from hpc_magics.core.errors import HpcMagicsError
from hpc_magics.jobfolder.files import load_own, write_atomically

PACKAGE = Path(hpc_magics.__file__).parent
DOOR = PACKAGE / "jobfolder" / "files.py"


def _calls(pattern: str) -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(pattern, line):
                found.append(f"{path.relative_to(PACKAGE)}:{number}")
    return found


@pytest.mark.parametrize(("what", "pattern"), [
    ("renames a file into place", r"\bos\.(replace|rename)\("),
    ("unpickles a file", r"\bpickle\.loads?\("),
])
def test_one_module_renames_and_unpickles_files(what: str, pattern: str) -> None:
    found = _calls(pattern)
    assert len(found) == 1 and found[0].startswith("jobfolder/files.py:"), \
        f"only jobfolder/files.py {what}; found: {found}"


def test_a_link_at_a_temporary_name_is_never_followed(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The node's facts were written through ``<file>.tmp`` (a name anyone could guess, and
    truncated through a link planted there); the one write picks a new name each time."""
    from hpc_magics.core.node_records import node_file
    from hpc_magics.node import usage_recorder

    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    folder = tmp_path / "job"
    folder.mkdir()
    for name in ("SLURM_ARRAY_JOB_ID", "SLURM_PROCID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLURM_JOB_ID", "123")
    target = folder / node_file("123", usage_recorder._node(), "0")
    target.with_suffix(".tmp").symlink_to(victim)
    usage_recorder.record_start(folder)
    assert victim.read_text() == "untouched"
    assert target.is_file() and not target.is_symlink()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_every_written_file_is_private_under_a_loose_umask(tmp_path: Path) -> None:
    """The submissions index wrote its entries with the umask's mode (0666 under umask 0)."""
    from hpc_magics.scheduler import job_index

    old = os.umask(0)
    try:
        job_index.note(job_index.Entry(tmp_path / "job", "123", None, 0.0, None), tmp_path)
        write_atomically(tmp_path / "plain.json", "{}")
    finally:
        os.umask(old)
    written = [*job_index.index_dir(tmp_path).iterdir(), tmp_path / "plain.json"]
    assert [stat.S_IMODE(p.stat().st_mode) for p in written] == [0o600, 0o600]
    assert not [p for p in tmp_path.rglob("*.tmp")]  # no temporary file left behind


def test_the_loader_refuses_a_file_others_may_write(tmp_path: Path) -> None:
    path = tmp_path / "values.pkl"
    write_atomically(path, pickle.dumps({"x": 1}))
    assert load_own(path) == {"x": 1}
    path.chmod(0o620)
    with pytest.raises(HpcMagicsError, match="is writable by others: refusing to load it"):
        load_own(path)
