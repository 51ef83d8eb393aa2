"""Every scheduler call of the product, replayed from every release's recordings.

tests/data/slurm/<release>/ holds what Slurm really answered (scripts/record-slurm-output)
and manifest.json the facts the recorder knew on its own: a new release's folder is
picked up here without a change. The product's own call runs with ``commands.run``
answering from the recording: it must ask exactly the recorded argv (else the recording
is stale: record again), and what it makes of the answer must match the facts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from product_calls import call

from hpc_magics.core.jobids import require_job_id, same_job
from hpc_magics.scheduler import live
from hpc_magics.scheduler.commands import CommandResult
from hpc_magics.scheduler.slurm_text import slurm_duration

RECORDINGS = Path(__file__).resolve().parent.parent / "data" / "slurm"


def _manifests() -> list[tuple[Path, dict[str, Any]]]:
    return [(path.parent, json.loads(path.read_text(encoding="utf-8")))
            for path in sorted(RECORDINGS.glob("*/manifest.json"))]


def _cases() -> Iterator[Any]:
    for folder, manifest in _manifests():
        for case in manifest["cases"]:
            yield pytest.param(folder, case, id=f"{folder.name}/{case['case']}")


def _same_argv(argv: Any) -> tuple[str, ...]:
    # a job script's path is a fresh temporary file on every call
    return tuple("<script>" if str(a).endswith(".sh") else str(a) for a in argv)


class Replay:
    """``commands.run`` answered from one case's recorded commands."""

    def __init__(self, folder: Path, case: dict[str, Any]) -> None:
        self.answers = {_same_argv(c["argv"]): CommandResult(
            tuple(c["argv"]), c["returncode"], (folder / c["file"]).read_text(encoding="utf-8"),
            c["stderr"]) for c in case["commands"]}
        self.asked: list[tuple[str, ...]] = []

    def __call__(self, argv: Any, *, timeout: float = 30.0, environ: Any = None
                 ) -> CommandResult:
        key = _same_argv(argv)
        assert key in self.answers, (
            f"the product asks {list(argv)}; the recording has "
            f"{[list(k) for k in self.answers]}: record again (scripts/record-slurm-output)")
        self.asked.append(key)
        return self.answers[key]


def _entries_of(view: Any, job_id: str) -> list[Any]:
    return [e for e in view.jobs if same_job(job_id, e.job_id)]


def check_queue(view: Any, facts: dict[str, Any]) -> None:
    assert view.error is None
    for job_id, fact in facts["jobs"].items():
        entries = _entries_of(view, job_id)
        assert entries, f"job {job_id} is not in the parsed queue"
        assert {e.name for e in entries} == {fact["name"]}
        if "partition" in fact:
            assert {e.partition for e in entries} == {fact["partition"]}
        states = {e.state for e in entries}
        assert fact["state"] in states, (job_id, states)
        if "tasks_running" in fact:
            running = {int(e.job_id.split("_")[1]) for e in entries if e.state == "RUNNING"}
            assert running == set(fact["tasks_running"])
            pending = set().union(*[require_job_id(e.job_id).task_numbers or set()
                                    for e in entries if e.state == "PENDING"])
            assert pending == set(fact["tasks_pending"])
        elif "het_components" in fact:
            hets = sorted(int(require_job_id(e.job_id).het or -1) for e in entries)
            assert hets == fact["het_components"]
        else:  # one entry: its reason and nodes, apart (%R holds one or the other)
            assert states == {fact["state"]}
            if "node_list" in fact:
                assert [(e.reason, e.node_list) for e in entries] == \
                    [(fact["reason"], fact["node_list"])]


def check_own_job(job: Any, facts: dict[str, Any]) -> None:
    assert (job.job_name, job.partition, job.nodes) == \
        (facts["name"], facts["partition"], facts["nodes"])


def check_scontrol_job(parsed: Any, facts: dict[str, Any]) -> None:
    lines, first = parsed
    assert len(lines) >= facts["lines_at_least"]
    for key, value in facts["fields"].items():
        assert first.get(key) == value, (key, first.get(key), value)


def _check_records(records: Any, expected: dict[str, dict[str, Any]]) -> None:
    assert records is not None
    for job_id, fact in expected.items():
        mine = [r for r in records if r.job_id == job_id]
        assert len(mine) == 1, f"{job_id}: {[r.job_id for r in records]}"
        assert mine[0].state == fact["state"]
        usage = mine[0].usage
        if usage is not None:  # slurmdbd's placeholder carries no figures
            assert (usage.gpus, usage.name) == (fact["gpus"], fact["name"])


def check_segments(segments: Any, facts: dict[str, Any]) -> None:
    assert [s.state for s in segments] == facts["states"]
    assert [s.index for s in segments] == list(range(1, len(facts["states"]) + 1))


def check_partitions(found: Any, facts: dict[str, Any]) -> None:
    assert set(found) == set(facts["partitions"])
    for name, limit in facts["partitions"].items():
        assert slurm_duration(found[name]["MaxTime"]) == slurm_duration(limit)
        assert found[name]["Default"] == ("YES" if name == facts["default"] else "NO")


def check_test_only(answer: Any, facts: dict[str, Any]) -> None:
    assert answer.fits is facts["fits"]
    if answer.fits:
        assert answer.start[:2] == "20", answer.start  # a date: 2026-11-25T20:50:17
    else:
        assert answer.message and "sbatch: error:" not in answer.message


def check_nodes(lines: Any, facts: dict[str, Any]) -> None:
    kinds = {kind for gpus in facts["gpus"].values() for kind in gpus}
    assert lines and all(line.get("NodeName") for line in lines)
    for line in lines:
        assert set(live.gres_gpus(line["Gres"])) <= kinds, line["Gres"]
    by_name = {line["NodeName"]: line for line in lines}
    for node, reason in facts.get("reasons", {}).items():
        assert by_name[node]["Reason"] == reason


CHECKS: dict[str, Callable[[Any, dict[str, Any]], None]] = {
    "queue": check_queue,
    "own_job": check_own_job,
    "scontrol_job": check_scontrol_job,
    "usage": lambda records, facts: _check_records(records, facts["records"]),
    "recent": lambda records, facts: _check_records(records, facts["records_include"]),
    "segments": check_segments,
    "scontrol_partitions": check_partitions,
    "node_groups": lambda found, facts: _equal(found, facts["gpus"]),
    "associations": lambda found, facts: _member(facts["accounts_include"],
                                                 {a.account for a in found}),
    "submit_limit": lambda limit, facts: _equal(limit, facts.get("limit")),
    "config": lambda found, facts: _equal((found[0], found[1] > 0), (facts["cluster"], True)),
    "test_only": check_test_only,
    "sbatch": lambda found, facts: _equal(found, (facts["job_id"],
                                                  (facts["job_id"], facts["cluster"]))),
    "nodes": check_nodes,
    "sbatch_refused": lambda message, facts: _member(facts["says"], message.lower()),
}


def _equal(found: Any, expected: Any) -> None:
    assert found == expected


def _member(item: Any, found: Any) -> None:
    assert item in found, (item, found)


def test_recordings_exist_for_each_release() -> None:
    releases = [folder.name for folder, manifest in _manifests() if "synthetic" not in manifest]
    assert "22.05" in releases
    for folder, manifest in _manifests():
        kinds = {case["kind"] for case in manifest["cases"]}
        if "synthetic" not in manifest:
            assert kinds == set(CHECKS), f"{folder.name} lacks {set(CHECKS) - kinds}"
            recorded = set(manifest["states"]["recorded"])
            assert recorded | set(manifest["states"]["not_recorded"]) >= \
                set(manifest["states"]["man_page"])


@pytest.mark.parametrize(("folder", "case"), list(_cases()))
def test_product_reads_the_recording(folder: Path, case: dict[str, Any], tmp_path: Path
                                     ) -> None:
    replay = Replay(folder, case)
    parsed = call(case["kind"], replay, case["args"], tmp_path)
    assert set(replay.asked) == set(replay.answers), "a recorded command was not asked"
    refused = case["facts"].get("refused", case["kind"] == "test_only"
                                and not case["facts"]["fits"])
    for command in case["commands"]:  # a refused argv (sacctmgr "where user=U") shows here
        assert (command["returncode"] != 0) is refused, command
    CHECKS[case["kind"]](parsed, case["facts"])
