"""The job widget's sweep section makes its results table from the final states: a table
made while the watcher's snapshots knew less is made again when they change.

A stand-in handle, on purpose: the order in which a real cluster's snapshots settle (a task
seen ended before it is seen FAILED) cannot be produced on demand; the table itself is the
real one (``sweep_handle.table_html``), and tests/magics/test_sweep.py runs the whole sweep
on the cluster.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas

from hpc_magics.widgets.sweep_view import SweepSection


@dataclass
class Snapshot:
    state: str


class SweepStandIn:
    """A sweep of three points whose snapshots and task files the test moves on."""

    def __init__(self) -> None:
        self.states = {0: "COMPLETED", 1: "COMPLETED", 2: "COMPLETED"}
        self.errors = {0: "", 1: "", 2: ""}
        self.tables_made = 0

    def task_states(self, ask: bool = True) -> dict[int, Snapshot]:
        return {index: Snapshot(state) for index, state in self.states.items()}

    def points(self) -> list[dict[str, int]]:
        return [{"x": index} for index in self.states]

    def table(self, ask: bool = True) -> Any:
        self.tables_made += 1
        return pandas.DataFrame({"x": list(self.states), "state": list(self.states.values()),
                                 "error": list(self.errors.values())})


def test_the_table_follows_the_final_states() -> None:
    sweep = SweepStandIn()
    sweep.states[1] = "RUNNING"
    section = SweepSection(sweep)
    assert section.table.value == "" and sweep.tables_made == 0  # not while a task runs

    sweep.states[1] = "ENDED"  # gone from the queue, accounting not asked yet
    section.render()
    assert "ENDED" in section.table.value and sweep.tables_made == 1

    sweep.states[1], sweep.errors[1] = "FAILED", "RuntimeError: first try of 1"
    section.render()
    assert "first try of 1" in section.table.value and "1 FAILED" in section.counts.value

    section.render()  # the same states: the table is not made again
    assert sweep.tables_made == 2
