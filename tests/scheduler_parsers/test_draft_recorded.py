"""``hpc-magics profiles --draft`` from every release's recorded ``scontrol show partition``
and ``sinfo`` answers: the draft loads as a profile and says what Slurm said; ``gpu_counts``
and ``[kernel]``, which Slurm's answers cannot tell, are commented templates that load too
once an admin uncomments them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from product_calls import installed
from test_recorded_output import RECORDINGS, Replay

from hpc_magics.core import profiles
from hpc_magics.scheduler.draft import draft_profile
from hpc_magics.scheduler.slurm_text import slurm_duration

ASKED = ("scontrol_partitions", "node_groups")  # the two answers a draft is made from


def _releases() -> list[Any]:
    found = []
    for path in sorted(RECORDINGS.glob("*/manifest.json")):
        manifest = json.loads(path.read_text(encoding="utf-8"))
        if "synthetic" not in manifest:
            cases = {case["kind"]: case for case in manifest["cases"] if case["kind"] in ASKED}
            found.append(pytest.param(path.parent, cases, id=path.parent.name))
    return found


def _drafted(folder: Path, cases: dict[str, Any]) -> str:
    replay = Replay(folder, cases["scontrol_partitions"])
    replay.answers.update(Replay(folder, cases["node_groups"]).answers)
    with installed(replay):
        text = draft_profile("recorded")
    assert set(replay.asked) == set(replay.answers), "the draft did not ask what was recorded"
    return text


def _uncommented(text: str) -> str:
    """The draft as an admin whose site documents GPU counts and an SSH tunnel edits it."""
    return re.sub(r"^# (gpu_counts = |\[kernel\]$|tunnel = |ssh_options = )", r"\1", text,
                  flags=re.M)


def _load(text: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> profiles.ClusterProfile:
    """Loaded as a site's profile file is, from a folder on HPC_MAGICS_PROFILE_PATH."""
    folder.mkdir()
    (folder / "drafted.toml").write_text(text, encoding="utf-8")
    monkeypatch.setenv("HPC_MAGICS_PROFILE_PATH", str(folder))
    return profiles.load_profile("drafted")


@pytest.mark.parametrize(("folder", "cases"), _releases())
def test_the_draft_of_each_release_loads_as_a_profile(
        folder: Path, cases: dict[str, Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert set(cases) == set(ASKED), f"{folder.name} lacks a recording the draft reads"
    text = _drafted(folder, cases)
    facts = cases["scontrol_partitions"]["facts"]
    gpus = cases["node_groups"]["facts"]["gpus"]
    profile = _load(text, tmp_path / "as drafted", monkeypatch)
    assert profile.cluster_names == ("recorded",)
    assert profile.default_partition == facts["default"]
    assert set(profile.partitions) == set(facts["partitions"])
    for name, limit in facts["partitions"].items():
        partition = profile.partitions[name]
        assert partition.max_time_s == slurm_duration(limit), name
        assert partition.gpu_types == tuple(gpus[name]), name
        assert partition.gpus_per_node == max(gpus[name].values()), name
        assert partition.gpu_counts == (), "a GPU count limit Slurm did not state"
    assert profile.kernel == {}
    # what Slurm cannot tell is there, commented, for every GPU partition
    assert text.count("\n# gpu_counts = ") == sum(max(g.values()) > 1 for g in gpus.values())

    edited = _load(_uncommented(text), tmp_path / "edited", monkeypatch)
    assert edited.kernel == {"tunnel": "ssh", "ssh_options": ["-F", "~/.ssh/hpc_nodes"]}
    for name in facts["partitions"]:
        most = max(gpus[name].values())
        assert edited.partitions[name].gpu_counts == (1, most), name


def test_without_slurm_nothing_is_drafted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """No scontrol on PATH, or one that lists no partition: one line saying so, exit 1, and
    no file (a profile of no partitions, installed, would refuse every partition)."""
    from hpc_magics.cli import main
    from hpc_magics.scheduler import commands

    out = tmp_path / "site.toml"
    monkeypatch.setenv("PATH", str(tmp_path))  # no Slurm command at all
    with installed(commands.run):
        assert main(["profiles", "--draft", "-o", str(out)]) == 1
    said = capsys.readouterr()
    assert not out.exists() and said.out == ""
    assert said.err.count("\n") == 1 and "scontrol is not on PATH" in said.err

    def no_partitions(argv: Any, **_: Any) -> commands.CommandResult:
        return commands.CommandResult(tuple(argv), 0, "", "")

    (tmp_path / "scontrol").write_text("")  # on PATH, answered by no_partitions
    (tmp_path / "scontrol").chmod(0o755)
    with installed(no_partitions):
        assert main(["profiles", "--draft"]) == 1
    said = capsys.readouterr()
    assert said.out == "" and "scontrol show partition lists no partition" in said.err
