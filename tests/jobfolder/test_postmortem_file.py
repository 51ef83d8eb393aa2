"""A failed cell's frames are kept in one file beside its results, read back by the one
owner-checked loader: locals that pickle as they were, the others (a lock, a local too big to
copy) named with their type and why."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from hpc_magics.jobfolder.files import POSTMORTEM_FILE, NodeFailure, load_own
from hpc_magics.node import postmortem


def _failing(count: int) -> None:
    lock = threading.Lock()
    big = bytes(2 << 20)
    count / (len(big) * lock.locked())  # 0: the lock is free


def test_frames_and_locals_are_kept_and_the_others_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postmortem, "LOCAL_MAX_BYTES", 1 << 20)  # a big local, made small
    try:
        _failing(41)
    except ZeroDivisionError as error:
        trace = error.__traceback__
        assert trace is not None
        postmortem.keep_frames(error, trace.tb_next, tmp_path)  # from _failing's frame on
    failure = load_own(tmp_path / POSTMORTEM_FILE)
    assert isinstance(failure, NodeFailure) and isinstance(failure.error, ZeroDivisionError)
    [frame] = failure.frames
    assert (frame.name, frame.values, frame.module) == ("_failing", {"count": 41}, __name__)
    assert frame.lineno == _failing.__code__.co_firstlineno + 3
    assert frame.not_pickled["lock"].startswith("_thread.lock: ")
    assert frame.not_pickled["big"] == "builtins.bytes: its pickle is over 1 MiB"
