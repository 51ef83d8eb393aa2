"""Big arrays travel beside the one pickle, as raw files the job maps back; shipping the
same data again links the file written before instead of writing it again."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hpc_magics.core.errors import ShippingError
from hpc_magics.shipping.analysis import analyse
from hpc_magics.shipping.buffers import BUFFERS_DIR, cache_dir, open_buffers, write_buffers
from hpc_magics.shipping.packing import pack
from hpc_magics.shipping.stream import OUT_OF_BAND_MIN_BYTES, load_names

CELL = "total = float(big.sum()) + holder['n']"


def _job_folder(root: Path, name: str) -> Path:
    root.mkdir(mode=0o700, exist_ok=True)
    folder = root / name
    folder.mkdir(mode=0o700)
    return folder


def _ship(namespace: dict[str, Any], root: Path, name: str) -> Any:
    payload = pack(CELL, analyse(CELL), namespace)
    return write_buffers(payload, _job_folder(root, name))


def test_a_big_array_goes_beside_the_pickle_and_comes_back_shared_and_writable(
        tmp_path: Path) -> None:
    big = np.arange(2_000_000, dtype=float)  # 16 MB: out of band
    small = np.arange(10)  # stays in the pickle
    namespace = {"big": big, "holder": {"big": big, "small": small, "n": 1}}
    payload = pack(CELL, analyse(CELL), namespace)
    assert len(payload.buffers) == 1 and len(payload.state) < 10_000
    assert payload.size == len(payload.state) + big.nbytes  # the summary counts it
    assert "big (ndarray, 16.0 MB)" in payload.summary()
    written = write_buffers(payload, _job_folder(tmp_path / "jobs", "job"))
    file = tmp_path / "jobs" / "job" / BUFFERS_DIR / "0.bin"
    assert written.buffers == () and written.buffer_files == (str(file),)
    assert file.stat().st_size == big.nbytes and file.stat().st_mode & 0o077 == 0
    loaded = load_names(written.state, written.state_names,
                        open_buffers(written, tmp_path / "jobs" / "job"))
    assert loaded["holder"]["big"] is loaded["big"]  # one pickle: still one object
    assert np.array_equal(loaded["big"], big) and np.array_equal(loaded["holder"]["small"], small)
    loaded["big"][0] = -1.0  # the cell may change it in place; the file does not change
    assert big[0] == 0.0 and np.fromfile(file)[0] == 0.0


def test_shipping_unchanged_data_again_links_the_file_and_changed_data_is_written(
        tmp_path: Path) -> None:
    big = np.random.default_rng(0).random(2_000_000)
    namespace = {"big": big, "holder": {"n": 1}}
    jobs = tmp_path / "jobs"
    first = _ship(namespace, jobs, "first")
    second = _ship(namespace, jobs, "second")
    inode = {name: (jobs / name / BUFFERS_DIR / "0.bin").stat().st_ino
             for name in ("first", "second")}
    assert inode["first"] == inode["second"]  # the same bytes: linked, not written
    assert [Path(f).name for f in first.buffer_files + second.buffer_files] == ["0.bin"] * 2
    # a change the sampled pages miss (the key stays the same): the full comparison sees it
    big[25_000] += 1.0
    third = _ship(namespace, jobs, "third")
    path = jobs / "third" / third.buffer_files[0]
    assert path.stat().st_ino != inode["first"]
    assert np.array_equal(np.fromfile(path), big)
    assert np.fromfile(jobs / "first" / BUFFERS_DIR / "0.bin")[25_000] != big[25_000]
    assert oct(cache_dir(jobs).stat().st_mode & 0o777) == "0o700"


def test_a_buffer_file_others_may_write_is_refused(tmp_path: Path) -> None:
    written = _ship({"big": np.ones(OUT_OF_BAND_MIN_BYTES), "holder": {"n": 0}},
                    tmp_path / "jobs", "job")
    file = tmp_path / "jobs" / "job" / written.buffer_files[0]
    os.chmod(file, 0o620)
    with pytest.raises(ShippingError, match="not yours alone"):
        open_buffers(written, tmp_path / "jobs" / "job")


def test_a_big_array_changed_in_place_by_the_job_comes_back(
        shell: Any, job_folders: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell("import numpy as np\nbig = np.arange(1_000_000, dtype=float)")
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5",
                         "np.multiply(big, 2, out=big)\nfirst = big[1]")
    out = capsys.readouterr().out
    [folder] = job_folders(shell)
    assert (folder / BUFFERS_DIR / "0.bin").stat().st_size == 8_000_000
    assert "big came back changed in place" in out
    assert shell.user_ns["first"] == 2.0 and shell.user_ns["big"][-1] == 2 * 999_999



def test_a_written_payload_pickles_with_any_protocol_and_loads_from_a_task_folder(
        tmp_path: Path) -> None:
    """A sweep pickles the payload once (default protocol) and runs it in task folders."""
    import pickle

    big = np.arange(1_000_000, dtype=float)
    written = _ship({"big": big, "holder": {"n": 3}}, tmp_path / "jobs", "sweep")
    again = pickle.loads(pickle.dumps(written, protocol=4))
    task = tmp_path / "jobs" / "sweep" / "tasks" / "00000"
    task.mkdir(parents=True)
    loaded = load_names(again.state, again.state_names, open_buffers(again, task))
    assert np.array_equal(loaded["big"], big) and loaded["holder"] == {"n": 3}


def test_the_cache_prune_follows_no_link(tmp_path: Path) -> None:
    """In a group-shared jobs root a member may put links where our cache goes: a link in
    place of the cache folder (to a folder of ours, such as a job's buffers) is never used,
    and a link inside it is removed as a link, its target left alone."""
    jobs = tmp_path / "jobs"
    jobs.mkdir(mode=0o700)
    theirs = tmp_path / "elsewhere"  # a job's buffers, or any folder of ours
    theirs.mkdir(mode=0o700)
    kept = [theirs / f"{n}.bin" for n in range(20)]
    for path in kept:
        path.write_bytes(b"data")
    cache_dir(jobs).symlink_to(theirs)
    big = np.random.default_rng(1).random(1_000_000)
    written = _ship({"big": big, "holder": {"n": 1}}, jobs, "first")
    assert np.array_equal(np.fromfile(jobs / "first" / written.buffer_files[0]), big)
    assert all(path.exists() for path in kept) and len(list(theirs.iterdir())) == 20

    cache_dir(jobs).unlink()  # a real cache now, with a link among its newest entries
    target = tmp_path / "target.bin"
    target.write_bytes(b"keep me")
    for n in range(20):
        _ship({"big": np.full(200_000, float(n)), "holder": {"n": 1}}, jobs, f"job{n}")
    (cache_dir(jobs) / "0-link.bin").symlink_to(target)
    os.utime(cache_dir(jobs) / "0-link.bin", (0, 0), follow_symlinks=False)  # the oldest
    _ship({"big": np.full(200_000, -1.0), "holder": {"n": 1}}, jobs, "last")
    assert target.read_bytes() == b"keep me"
    assert not (cache_dir(jobs) / "0-link.bin").is_symlink()  # pruned: the link, not its target
    assert len(list(cache_dir(jobs).glob("*.bin"))) == 16
