"""One small test per parser bug the recordings showed (tests/data/slurm)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from product_calls import installed
from test_recorded_output import RECORDINGS, Replay

from hpc_magics.core.errors import SubmissionError
from hpc_magics.core.resources import ResourceRequest, updated
from hpc_magics.scheduler import commands, limits, live
from hpc_magics.scheduler.slurm_text import parse_scontrol_job, parse_squeue, scontrol_fields
from hpc_magics.scheduler.submit import Submitted, parse_answer


def test_scontrol_values_keep_their_spaces() -> None:
    # a job name, --comment and log path with spaces, as 22.05 prints them (two spaces
    # after an empty-looking value are Slurm's)
    line = ("JobId=42 JobName=rec-run a b UserId=root(0) Comment=a b c  StdErr=/w/rec out "
            "42.txt StdIn=/dev/null StdOut=/w/rec out 42.txt Power= TresPerNode=gres:gpu:1")
    fields = scontrol_fields(line)
    assert fields["JobName"] == "rec-run a b"
    assert fields["Comment"] == "a b c"
    assert fields["StdOut"] == "/w/rec out 42.txt"
    assert fields["Power"] == ""
    assert fields["TresPerNode"] == "gres:gpu:1"


def test_a_lower_case_word_with_equals_stays_in_the_value() -> None:
    # Slurm's keys start upper-case: "x=1" inside a job name is part of the name
    assert scontrol_fields("JobId=7 JobName=sweep x=1 Partition=debug")["JobName"] == \
        "sweep x=1"


def test_scontrol_show_job_reads_the_leaders_line() -> None:
    text = "JobId=44 HetJobOffset=0 JobName=a b\nJobId=45 HetJobOffset=1 JobName=c\n"
    assert parse_scontrol_job(text) == {"JobId": "44", "HetJobOffset": "0", "JobName": "a b"}


@pytest.mark.parametrize(("gres", "gpus"), [
    ("gpu:4", {live.UNTYPED: 4}),
    ("gpu:v100:2", {"v100": 2}),
    ("gpu:a100:4(S:0-1)", {"a100": 4}),
    ("gpu:v100:2,gpu:2", {"v100": 2, live.UNTYPED: 2}),
    ("(null)", {}),
    ("shard:8,gpu:1", {live.UNTYPED: 1}),
])
def test_untyped_gres_is_counted(gres: str, gpus: dict[str, int]) -> None:
    assert live.gres_gpus(gres) == gpus


def _synthetic_case(name: str) -> tuple[Path, dict[str, Any]]:
    folder = RECORDINGS / "synthetic"
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    return folder, next(c for c in manifest["cases"] if c["case"] == name)


def test_untyped_gpus_pass_the_live_check_and_a_type_is_refused_plainly() -> None:
    replay = Replay(*_synthetic_case("sinfo-node-groups-untyped"))
    data = {"MaxTime": "UNLIMITED", "MaxNodes": "UNLIMITED"}
    with installed(replay):
        assert live._partition_limits(updated(ResourceRequest(profile="lab"),
                                              {"gres": "gpu:2"}), "gpu", data) == []
        refused = live._partition_limits(updated(ResourceRequest(profile="lab"),
                                                 {"gres": "gpu:v100:1"}), "gpu", data)
    assert [f.message for f in refused] == [
        "GPU type 'v100' is not in partition 'gpu': sinfo lists untyped GPUs only: drop "
        "the type"]


@pytest.mark.parametrize(("answer", "parsed"), [
    ("46;lab\n", ("46", "lab")),
    ("44\n", ("44", None)),
    ("sbatch: warning: x\n12;alps-daint\n", ("12", "alps-daint")),
])
def test_sbatch_parsable_answer_keeps_the_cluster(answer: str, parsed: Any) -> None:
    assert parse_answer(answer) == Submitted(*parsed)


def test_sbatch_answer_with_a_cluster_gives_the_job_id_and_cluster() -> None:
    assert parse_answer("46;lab\n") == Submitted("46", "lab")
    with pytest.raises(SubmissionError, match="not a job id"):
        parse_answer("Submitted batch job 5\n")


def test_sacctmgr_where_and_user_are_two_words(monkeypatch: pytest.MonkeyPatch) -> None:
    # sacctmgr answers "Unknown condition: where user=U" (exit 1) to one word
    asked: list[tuple[str, ...]] = []

    def runner(argv: Any, **_: Any) -> commands.CommandResult:
        asked.append(tuple(argv))
        return commands.CommandResult(tuple(argv), 0, "", "")

    monkeypatch.setattr(commands, "run", runner)
    limits.forget()
    assert limits.association_limits("alice", None) is None
    assocs = [argv for argv in asked if "assoc" in argv]
    assert assocs and "where" in assocs[0]
    assert assocs[0][assocs[0].index("where") + 1] == "user=alice"


def test_squeue_reason_or_nodes_goes_by_the_parentheses() -> None:
    # 22.05's own lines: a STOPPED job keeps its node, a SPECIAL_EXIT one has a reason
    stopped, special = parse_squeue(
        "48|STOPPED|debug|1|0:02|5:00|2026-11-25T20:55:30|c2|2026-11-25T20:50:30|"
        "2026-11-25T20:50:17|rec-pause\n"
        "49|SPECIAL_EXIT|debug|1|0:00|5:00|2026-11-25T20:55:42|(job requeued in held state)|"
        "2026-11-25T20:50:42|2026-11-25T20:50:31|rec-special\n")
    assert (stopped.reason, stopped.node_list) == ("", "c2")
    assert (special.reason, special.node_list) == ("job requeued in held state", "")
