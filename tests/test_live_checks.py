"""Live checks on the real test cluster: partition limits from scontrol, GRES from sinfo,
accounts and QOS from sacctmgr (an account and QOS created for the test), sbatch
--test-only, the drafted profile, and why a pending job waits."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from hpc_magics.cli import main
from hpc_magics.core.checkscript import check_script
from hpc_magics.core.jobs import plain_reason
from hpc_magics.core.profiles import profile_from_mapping
from hpc_magics.core.resources import ResourceRequest, updated
from hpc_magics.scheduler import commands, limits, live
from hpc_magics.scheduler.draft import draft_profile
from hpc_magics.scheduler.queue import JobQueue

if TYPE_CHECKING:  # fixture types only
    from conftest import ThrowawayAccount

TEST_USER, SECOND_USER = "hpcuser1", "hpcuser2"  # made by scripts/slurm-cluster
TEST_NAME = "hpcm_test_fidelity"


@pytest.fixture(autouse=True)
def fresh_session(slurm_cluster: object) -> Iterator[None]:
    limits.forget()  # each test is its own session
    yield
    limits.forget()


def request(**values: str) -> ResourceRequest:
    return updated(ResourceRequest(profile="lab"), values)


def options(report: live.LiveReport) -> dict[str, str]:
    return {f.field: f.message for f in report.findings if f.severity == "error"}


def test_partition_max_time_and_nodes_from_scontrol() -> None:
    assert live.partitions()["debug"]["MaxTime"] == "00:20:00"
    assert "MaxTime of partition 'long', 2-00:00:00" in options(
        live.check(request(partition="long", time_s="3-00:00:00")))["time"]
    assert "time" in options(live.check(request(time_s="30")))  # debug is the default
    assert options(live.check(request(partition="long", time_s="1-00:00:00"))) == {}
    assert "partition" in options(live.check(request(partition="gpu")))


def test_gres_types_from_sinfo() -> None:
    assert live.gpu_types("debug") == {"v100": 2}
    assert "sinfo lists v100" in options(live.check(request(gres="gpu:a100:1", time_s="5")))["gres"]
    assert "gpus-per-node" in options(live.check(request(gpus_per_node="v100:3", time_s="5")))
    assert options(live.check(request(gres="gpu:v100:2", time_s="5"))) == {}


@pytest.fixture
def test_account(throwaway_account: ThrowawayAccount) -> str:
    """An account and a QOS, both named TEST_NAME, with TEST_USER associated; removed after."""
    return throwaway_account(TEST_NAME, TEST_USER)


@pytest.mark.serial  # sacctmgr changes the accounting every other test's job goes through
def test_accounts_and_qos_from_sacctmgr(test_account: str) -> None:
    mine = live.associations(TEST_USER)
    assert mine is not None and test_account in {a.account for a in mine}
    ok = live.check(request(account=test_account, qos=test_account, time_s="5"), user=TEST_USER)
    assert options(ok) == {}
    other_qos = live.check(request(account=test_account, qos="nosuchqos", time_s="5"),
                           user=TEST_USER)
    assert test_account in options(other_qos)["qos"]
    # a user without that account
    theirs = live.check(request(account=test_account, time_s="5"), user=SECOND_USER)
    assert f"{SECOND_USER} has no association with account {test_account!r}" in \
        options(theirs)["account"]


def test_sbatch_test_only_says_when_it_would_start_and_what_it_refuses() -> None:
    fits = live.check(request(time_s="5"), "#!/bin/bash\n#SBATCH -p debug -t 5\nhostname\n")
    assert options(fits) == {} and fits.start.startswith("20")
    too_long = live.check(request(time_s="5"),
                          "#!/bin/bash\n#SBATCH -p debug -t 5:00:00\nhostname\n")
    assert "sbatch --test-only" in next(f.message for f in too_long.findings)


def test_each_command_is_asked_once_per_session(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, ...]] = []
    real_run = commands.run

    def counting(argv: list[str], **kwargs: object) -> commands.CommandResult:
        asked.append(tuple(argv))  # counts, then runs the real command
        return real_run(argv, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(commands, "run", counting)
    script = "#!/bin/bash\n#SBATCH -p debug -t 5 --gres=gpu:v100:1\nhostname\n"
    for _ in range(3):
        live.check(request(time_s="5", gres="gpu:v100:1"), script)
    assert len(asked) == len(set(asked)) == 4  # scontrol, sinfo, sacctmgr, sbatch --test-only


def test_cli_check_live_on_this_cluster(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.sh"
    job.write_text("#!/bin/bash\n#SBATCH -p debug -t 5 --gres=gpu:v100:1\nhostname\n")
    assert main(["check", "--profile", "lab", "--live", str(job)]) == 0
    assert "sbatch --test-only expects it to start at" in capsys.readouterr().out
    job.write_text("#!/bin/bash\n#SBATCH -p long -t 3-00:00:00\nhostname\n")
    assert main(["check", "--profile", "lab", "--live", str(job)]) == 1
    assert "(live)" in capsys.readouterr().out


def test_cli_check_asks_by_the_rule_a_cell_is_asked_by(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """No --live/--no-live: the cluster is asked when the profile is this cluster's or any
    cluster's (generic), as for a %%sbatch cell, and another cluster's profile says why not."""
    job = tmp_path / "job.sh"
    job.write_text("#!/bin/bash\n#SBATCH -p long -t 3-00:00:00\nhostname\n")
    assert main(["check", "--profile", "generic", str(job)]) == 1  # long allows 2 days here
    said = capsys.readouterr().out
    assert "live: asked" in said and "(live)" in said
    job.write_text("#!/bin/bash\n#SBATCH -p alvis -t 1:00:00 -A na2026-1-1\nhostname\n")
    main(["check", "--profile", "alvis", str(job)])
    said = capsys.readouterr().out
    assert "live: asked" not in said and "not this cluster" in said


def test_drafted_profile_loads_and_validates_a_job(tmp_path: Path) -> None:
    text = draft_profile("lab")
    profile = profile_from_mapping("drafted", tomllib.loads(text))
    assert profile.default_partition == "debug"
    assert profile.partitions["long"].max_time_s == 2 * 86400
    assert profile.partitions["debug"].gpu_types == ("v100",)
    # which GPU counts the site allows and how kernels are reached: templates, not guesses
    assert profile.partitions["debug"].gpu_counts == () and profile.kernel == {}
    assert "\n# gpu_counts = [1, 2]  # only if the site" in text
    assert '\n# [kernel]\n# tunnel = "ssh"\n' in text
    good = check_script("#SBATCH -p long -t 1-00:00:00 --gres=gpu:v100:2\n", profile)
    assert good.ok
    bad = check_script("#SBATCH -p debug -t 30 --gres=gpu:v100:3 --mem=9G\n", profile)
    assert {f.field for f in bad.errors} == {"time", "gres", "mem"}
    out = tmp_path / "site.toml"
    assert main(["profiles", "--draft", "-o", str(out)]) == 0
    assert tomllib.loads(out.read_text())["cluster_names"] == ["lab"]


def test_pending_job_reason_in_words_and_expected_start(tmp_path: Path) -> None:
    """The queue's one view (squeue's %R and %S) says why a job waits and when Slurm
    expects it to start: no second squeue."""
    submitted = commands.run(["sbatch", "--parsable", "-p", "debug", "-t", "1",
                              "--begin=now+3600", "-o", "/dev/null", "--wrap", "true"])
    assert submitted.ok, submitted.stderr
    job_id = submitted.stdout.strip().split(";")[0]
    try:
        job = JobQueue(cache_dir=tmp_path).view(max_age_s=0).find(job_id)
        assert job is not None and job.phase == "pending", job
        assert plain_reason(job.reason) == "waiting for its requested start time (--begin)"
        assert job.start_time is not None and job.start_time > time.time() + 3000  # --begin
    finally:
        commands.run(["scancel", job_id])  # our own job
