"""The limits of today's systems as their sites document them (read on 2026-11-25; each
profile's file names the page and the copy it was read through): a job script inside a
limit passes, one beyond it is refused in one line naming the limit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hpc_magics.cli import main
from hpc_magics.core.checkscript import ScriptReport, check_script, render
from hpc_magics.core.errors import InvalidRequest
from hpc_magics.core.profiles import load_profile

ACCOUNT = "#SBATCH --account=def-smith"


def check(lines: list[str], profile: str) -> ScriptReport:
    return check_script("#!/bin/bash\n" + "\n".join(lines) + "\nhostname\n",
                        load_profile(profile))


def refused(report: ScriptReport) -> set[str]:
    return {finding.field for finding in report.errors}


@pytest.mark.parametrize(("profile", "fits", "too_much"), [
    ("fir", "6000G", "6200G"),       # 8 nodes of 6144000M; the rest 768000M
    ("nibi", "6000G", "6200G"),      # 10 nodes of 6144000M
    ("rorqual", "3000G", "3100G"),   # 8 nodes of 3086250M
    ("narval", "4000G", "4100G"),    # 3 nodes of 4000G
])
def test_memory_beyond_the_largest_node_is_refused(profile: str, fits: str,
                                                   too_much: str) -> None:
    lines = [ACCOUNT, "#SBATCH --time=1:00:00"]
    assert check([*lines, f"#SBATCH --mem={fits}"], profile).ok
    report = check([*lines, f"#SBATCH --mem={too_much}"], profile)
    assert refused(report) == {"mem"}, render(report, profile)
    assert "\n" not in report.errors[0].message


@pytest.mark.parametrize(("profile", "per_node"), [("fir", 4), ("nibi", 8), ("rorqual", 4)])
def test_h100_nodes_hold_what_the_site_lists(profile: str, per_node: int) -> None:
    lines = [ACCOUNT, "#SBATCH --time=1:00:00"]
    assert check([*lines, f"#SBATCH --gpus-per-node=h100:{per_node}"], profile).ok
    # the full name the sites' tables give for a whole H100
    assert check([*lines, "#SBATCH --gpus-per-node=nvidia_h100_80gb_hbm3:1"], profile).ok
    over = check([*lines, f"#SBATCH --gpus-per-node=h100:{per_node + 1}"], profile)
    assert refused(over) == {"gpus-per-node"}


def test_nibis_mi300a_nodes_are_known() -> None:
    script = [ACCOUNT, "#SBATCH --nodes=1 --ntasks=4 --cpus-per-task=24",
              "#SBATCH --gpus=mi300a:4", "#SBATCH --mem=100g", "#SBATCH --time=00:02:00"]
    report = check(script, "nibi")  # the Nibi page's own example
    assert report.ok, render(report, "nibi")
    assert "mi300a" in load_profile("nibi").partitions["mi300a-node"].gpu_types


def test_trillium_schedules_one_gpu_or_a_whole_gpu_node() -> None:
    lines = [ACCOUNT, "#SBATCH --time=12:00:00"]
    for good in ("--gpus-per-node=1", "--gpus-per-node=4", "--gpus-per-node=h100:4"):
        assert check([*lines, f"#SBATCH {good}"], "trillium").ok, good
    assert check([*lines, "#SBATCH --nodes=2", "#SBATCH --gpus=8"], "trillium").ok
    for bad in ("--gpus-per-node=2", "--gpus-per-node=3", "--gpus=2"):
        report = check([*lines, f"#SBATCH {bad}"], "trillium")
        assert refused(report) == {bad[2:].split("=")[0]}, bad  # the line that asked
        message = report.errors[0].message
        assert "1 or 4 GPUs per node" in message and "\n" not in message


def test_the_profile_listing_shows_trillium_gpu_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profiles", "trillium"]) == 0
    shown = capsys.readouterr().out
    assert "default partition: compute" in shown
    assert re.search(r"debug +max 02:00:00, 2 nodes, .*1 or 4 GPUs a node only", shown)


def test_trillium_partitions_and_their_limits() -> None:
    lines = [ACCOUNT, "#SBATCH --nodes=2 --ntasks-per-node=192"]
    assert check([*lines, "#SBATCH --time=24:00:00"], "trillium").ok  # compute, by default
    day = check([*lines, "#SBATCH --time=24:30:00"], "trillium")
    assert refused(day) == {"time"} and "'compute'" in day.errors[0].message
    assert check([*lines, "#SBATCH -p debug --time=1:00:00"], "trillium").ok
    assert refused(check([*lines, "#SBATCH -p debug --time=3:00:00"], "trillium")) == {"time"}
    three = check(["#SBATCH -p debug -N 3 --time=30:00", ACCOUNT], "trillium")
    assert refused(three) == {"nodes"}
    # the archive partition is not listed: a warning to check with sinfo, not a refusal
    hpss = check([ACCOUNT, "#SBATCH -p archiveshort --time=1:00:00"], "trillium")
    assert hpss.ok and "partition" in {f.field for f in hpss.findings}


@pytest.mark.parametrize(("partition", "fits", "too_long"), [
    ("lncc-h100_shared", "24:00:00", "24:01:00"),
    ("lncc-gh200", "24:00:00", "2-00:00:00"),
    ("lncc-mi300a_shared", "1-00:00:00", "30:00:00"),
    ("lncc-cpu_amd", "72:00:00", "73:00:00"),
    ("lncc-grace", "3-00:00:00", "4-00:00:00"),
    ("cpu_amd_dev", "20:00", "21:00"),
    ("mi300a_dev", "20:00", "1:00:00"),
])
def test_sdumont_2nd_queues_refuse_a_longer_job(partition: str, fits: str,
                                                 too_long: str) -> None:
    gpus = [] if "cpu" in partition or "grace" in partition else ["#SBATCH --gres=gpu:1"]
    lines = [f"#SBATCH --partition={partition}", *gpus]
    assert check([*lines, f"#SBATCH --time={fits}"], "sdumont2nd").ok
    report = check([*lines, f"#SBATCH --time={too_long}"], "sdumont2nd")
    assert refused(report) == {"time"}, render(report, "sdumont2nd")


def test_sdumont_2nd_per_user_node_limits_and_partner_queues() -> None:
    three = check(["#SBATCH -p lncc-h100 -N 3 --time=1:00:00"], "sdumont2nd")
    assert refused(three) == {"nodes"}
    assert refused(check(["#SBATCH -p lncc-mi300a -N 2 --time=1:00:00"],
                         "sdumont2nd")) == {"nodes"}
    # partner queues: known (no partition warning), their limits are the project's
    partner = check(["#SBATCH -p ict-h100 --gres=gpu:4 --time=2-00:00:00",
                     "#SBATCH --account=petro1"], "sdumont2nd")
    assert partner.ok and "partition" not in {f.field for f in partner.findings}


def test_gpu_counts_must_be_a_list_of_numbers(tmp_path: Path) -> None:
    (tmp_path / "odd.toml").write_text('[partitions.gpu]\ngpus_per_node = 4\n'
                                       'gpu_counts = "1,4"\n')
    with pytest.raises(InvalidRequest, match=r"gpu_counts = '1,4' must be a list"):
        load_profile("odd", [tmp_path])


def one_line_naming(report: ScriptReport, option: str, *words: str) -> None:
    """Refused on exactly that option, in one line naming the value and the fix."""
    assert refused(report) == {option}, render(report, "?")
    message = report.errors[0].message
    assert "\n" not in message and "ask for at most" in message
    assert all(word in message for word in words), message


@pytest.mark.parametrize(("profile", "lines", "fits", "too_much", "option", "limit"), [
    # Alvis: the largest nodes (NAISS course, 2026-02): 64 cores (A40/A100), 1536G (T4)
    ("alvis", ["-A NAISS2024-5-1 -t 1:00:00 --gpus-per-node=A100:4"],
     "--cpus-per-task=64", "--cpus-per-task=65", "cpus-per-task", "64"),
    # SDumont's gdl node: 2 x Xeon Gold 6148 (40 cores), 8 V100
    ("sdumont", ["-p gdl -N 1 -t 1:00:00 --gpus=8"],
     "--cpus-per-task=40", "--cpus-per-task=41", "cpus-per-task", "40"),
    # M3 (MASSIVE's guide, 2019): m3g nodes hold 3 V100, m3h 2 P100, desktop K80 nodes 4
    ("m3", ["--account=ml20 -t 1:00:00 -p m3g"],
     "--gres=gpu:V100:3", "--gres=gpu:V100:4", "gres", "3"),
    ("m3", ["--account=ml20 -t 1:00:00 -p m3h"],
     "--gres=gpu:P100:2", "--gres=gpu:P100:3", "gres", "2"),
    ("m3", ["--account=ml20 -t 1:00:00 -p desktop --qos=desktopq"],
     "--gres=gpu:K80:4", "--gres=gpu:K80:5", "gres", "4"),
])
def test_a_request_beyond_a_documented_node_is_refused(profile: str, lines: list[str],
                                                       fits: str, too_much: str,
                                                       option: str, limit: str) -> None:
    block = [f"#SBATCH {line}" for line in lines]
    at_limit = check([*block, f"#SBATCH {fits}"], profile)
    assert at_limit.ok, render(at_limit, profile)
    over = check([*block, f"#SBATCH {too_much}"], profile)
    one_line_naming(over, option, too_much.rsplit(":", 1)[-1].rsplit("=", 1)[-1], limit)


@pytest.mark.parametrize(("profile", "lines", "fits", "too_much"), [
    ("alvis", ["-A NAISS2024-5-1 -t 1:00:00 --gpus-per-node=T4:1"], "1536G", "1600G"),
    ("sdumont", ["-p gdl -N 1 -t 1:00:00 --gpus=1"], "384G", "400G"),
])
def test_memory_beyond_a_documented_node_is_refused(profile: str, lines: list[str],
                                                    fits: str, too_much: str) -> None:
    block = [f"#SBATCH {line}" for line in lines]
    assert check([*block, f"#SBATCH --mem={fits}"], profile).ok
    over = check([*block, f"#SBATCH --mem={too_much}"], profile)
    assert refused(over) == {"mem"} and too_much in over.errors[0].message
    assert "\n" not in over.errors[0].message and "--mem=0" in over.errors[0].message


def test_m3_desktops_take_the_p100_nodes_the_guide_lists() -> None:
    desktop = ["#SBATCH --account=ml20 -t 2:00:00 -p desktop --qos=desktopq"]
    for gpus in ("P100:2", "P4:1", "K80:2"):
        report = check([*desktop, f"#SBATCH --gres=gpu:{gpus}"], "m3")
        assert report.ok, render(report, "m3")
