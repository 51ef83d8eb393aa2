"""The kernel's time limit is announced in the notebook before Slurm ends the kernel: at the
server's warning minutes, once when due (iopub, while idle) and at the next cell."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.node.kernel import kernel_argv
from hpc_magics.node.walltime import (
    DEFAULT_WARN_MINUTES,
    EXTENSION_ARGUMENT,
    WARN_MINUTES_ENV,
    Warnings,
    warn_minutes,
    watch,
)

from .conftest import Started, install, start


def test_each_warning_is_said_once_and_the_most_urgent_when_several_are_due() -> None:
    end = 10_000.0
    warnings = Warnings("42", end, (5, 15))
    assert warnings.next_at() == end - 15 * 60
    assert warnings.due(end - 16 * 60) is None
    first = warnings.due(end - 14 * 60)
    assert first is not None and "job 42" in first and "in 14 min" in first
    assert warnings.due(end - 13 * 60) is None  # said once
    late = Warnings("42", end, (5, 15))
    said = late.due(end - 60)  # both passed (the kernel started late): one line
    assert said is not None and "in 1 min" in said
    assert late.due(end - 30) is None and late.next_at() is None
    short = Warnings("42", end, (5, 15), started=end - 10 * 60)  # a 10-minute job
    assert short.due(end - 9 * 60) is None  # no 15-minute warning at its start
    assert short.next_at() == end - 5 * 60


def test_the_watcher_sleeps_until_each_warning_then_says_it() -> None:
    now = [0.0]
    said: list[str] = []
    watch(Warnings("7", 1200.0, (15, 5)), said.append, clock=lambda: now[0],
          sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert now[0] == 1200.0 - 5 * 60  # it slept until the last one, not beyond
    assert [("in 15 min" in s, "in 5 min" in s) for s in said] == [(True, False),
                                                                   (False, True)]


def test_the_minutes_come_from_the_environment_or_are_the_servers() -> None:
    assert warn_minutes({WARN_MINUTES_ENV: "2, 10"}) == (10.0, 2.0)
    assert warn_minutes({WARN_MINUTES_ENV: "soon"}) == DEFAULT_WARN_MINUTES
    assert warn_minutes({}) == DEFAULT_WARN_MINUTES


def test_only_an_ipykernel_gets_the_extension(tmp_path: Any) -> None:
    ipykernel = kernel_argv(["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                            tmp_path / "c.json")
    assert ipykernel[-1] == EXTENSION_ARGUMENT
    other = kernel_argv(["julia", "-i", "kernel.jl", "{connection_file}"], tmp_path / "c.json")
    assert EXTENSION_ARGUMENT not in other


@pytest.mark.slurm
def test_a_kernel_job_warns_in_the_notebook_before_its_time_limit(
        kernel_prefix: Path, started: Started, monkeypatch: pytest.MonkeyPatch) -> None:
    # a 5-minute job warned 4.7 minutes before its end: due 18 s after it starts (a
    # kernel that took longer to start would drop it as passed: the margin)
    monkeypatch.setenv(WARN_MINUTES_ENV, "4.7")
    assert install("lab-walltime", kernel_prefix, "--profile", "lab", "-t", "5") == 0
    manager, client = start("lab-walltime", started)
    job_id = manager.provisioner.job_id
    deadline, heard = time.monotonic() + 60, ""
    while "time limit" not in heard and time.monotonic() < deadline:
        message = client.get_iopub_msg(timeout=60)  # the kernel is idle meanwhile
        if message["msg_type"] == "stream" and message["content"]["name"] == "stderr":
            heard += message["content"]["text"]
    assert f"job {job_id} reaches its time limit in 5 min" in heard
    msg_id = client.execute("x = 1")
    said = ""
    while True:  # the cell's own messages, until it is done
        message = client.get_iopub_msg(timeout=60)
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "stream" and message["content"]["name"] == "stderr":
            said += message["content"]["text"]
        if message["msg_type"] == "status" and \
                message["content"]["execution_state"] == "idle":
            break
    assert "reaches its time limit in" in said  # again at the next cell
