"""Which Slurm variables reach sbatch (core/slurm_environment): the user's stay, leaks go."""

from __future__ import annotations

import pytest

from hpc_magics.core import slurm_environment as se
from hpc_magics.core import validation
from hpc_magics.core.errors import InvalidRequest
from hpc_magics.core.profiles import load_profile
from hpc_magics.core.resources import GpuRequest, ResourceRequest
from hpc_magics.scheduler.commands import scrubbed_environment

LEAKED = ["SLURM_JOB_ID", "SLURM_JOBID", "SLURM_NODELIST", "SLURM_MEM_PER_NODE",
          "SLURM_MEM_PER_CPU", "SLURM_CPUS_ON_NODE", "SLURM_CPUS_PER_TASK", "SLURM_NTASKS",
          "SLURM_TASKS_PER_NODE", "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_PROCID",
          "SLURM_JOB_ACCOUNT", "SLURM_ARRAY_TASK_ID", "SLURM_CPUS_PER_TASK_HET_GROUP_0",
          "SBATCH_MEM_BIND", "PMI_RANK", "SLURM_EXPORT_ENV"]
KEPT = ["SBATCH_ACCOUNT", "SBATCH_COMMENT", "SBATCH_EXPORT", "SBATCH_TIMELIMIT",
        "SALLOC_ACCOUNT", "SRUN_CPUS_PER_TASK", "SLURM_ACCOUNT", "SLURM_CONF", "SLURM_CLUSTERS"]


def test_leaks_go_and_the_users_defaults_stay() -> None:
    env = {name: "x" for name in LEAKED + KEPT} | {"HOME": "/home/u", "JUPYTERHUB_API_TOKEN": "t"}
    scrubbed = scrubbed_environment(env)
    assert sorted(n for n in env if n in scrubbed) == sorted([*KEPT, "HOME"])
    for name in LEAKED:
        assert se.leak_reason(name), name


def test_the_one_regex_answers_as_the_patterns_one_by_one() -> None:
    """leak_reason rejects most names with one regex (every Slurm command scrubs the whole
    environment): its answers stay those of fnmatch, pattern by pattern, first match wins."""
    from fnmatch import fnmatchcase

    for table in (se.LEAKED, se.FORMATTING):
        names = {pattern.replace("*", fill).replace("?", "X")
                 for pattern, _ in table for fill in ("", "X", "A_B")}
        names |= {name[:-1] for name in names} | {"x" + name for name in names}
        names |= {*LEAKED, *KEPT, "HOME", "PATH", "SLURM", "slurm_job_id", "SLURM_JOB_ID\n"}
        for name in sorted(names):
            expected = next((why for pattern, why in table if fnmatchcase(name, pattern)), None)
            assert se.leak_reason(name, table) == expected, name


def test_what_commands_print_goes_from_the_readers_only() -> None:
    env = {"SLURM_TIME_FORMAT": "relative", "SQUEUE_STATES": "RUNNING", "SACCT_FORMAT": "JobID",
           "SINFO_SORT": "-P", "SCONTROL_ALL": "1", "SBATCH_PARTITION": "long"}
    assert scrubbed_environment(env, reading=True) == {"SBATCH_PARTITION": "long"}
    assert scrubbed_environment(env) == env  # sbatch and srun: the job keeps the user's


SCRIPT = """#!/bin/bash
#SBATCH --job-name=j
#SBATCH -A proj
#SBATCH --time=00:05:00
#SBATCH --mem-per-cpu=100M
#SBATCH --output=/f/%j.out

umask 077
#SBATCH --comment=not-a-directive-any-more
"""


def test_the_scripts_own_lines_win_over_sbatch_variables() -> None:
    env = {"SBATCH_ACCOUNT": "other", "SBATCH_TIMELIMIT": "1:00:00", "SBATCH_MEM_PER_NODE": "1G",
           "SBATCH_OUTPUT": "/elsewhere", "SBATCH_COMMENT": "mine", "SBATCH_EXPORT": "NONE"}
    kept = se.for_sbatch(env, SCRIPT)
    # sbatch would apply these over the script: the cell's -A, -t, memory and the logs win
    assert sorted(kept) == ["SBATCH_COMMENT", "SBATCH_EXPORT"]
    assert se.overridden(env, SCRIPT) == ["SBATCH_ACCOUNT", "SBATCH_MEM_PER_NODE",
                                          "SBATCH_OUTPUT", "SBATCH_TIMELIMIT"]


def test_without_sbatch_defaults_the_script_is_not_read_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every submission hands its environment to sbatch through ``for_sbatch``: reading the
    script's #SBATCH block back (a shlex split per line, ~0.3 ms of each cell's CPU) is
    only needed when the user set an sbatch default it could override."""
    read: list[str] = []
    real = se.script_options
    monkeypatch.setattr(se, "script_options", lambda script: read.append(script) or real(script))
    plain = {"HOME": "/home/u", "SLURM_CONF": "/etc/slurm.conf", "SALLOC_ACCOUNT": "a"}
    assert se.for_sbatch(plain, SCRIPT) == plain and read == []
    assert se.for_sbatch({**plain, "SBATCH_TIMELIMIT": "1:00:00"}, SCRIPT) == plain
    assert len(read) == 1


def test_a_default_account_satisfies_account_required() -> None:
    alvis = load_profile("alvis")
    bare = ResourceRequest(profile="alvis", time_s=600, backend="slurm",
                           gpus_per_node=GpuRequest(1, "A40"))
    assert [p.field for p in validation.check(bare, alvis)] == ["account"]
    filled, sources = se.with_defaults(bare, {"SBATCH_ACCOUNT": "NAISS2024-5-1",
                                              "SBATCH_TIMELIMIT": "2:00:00"})
    assert filled.account == "NAISS2024-5-1" and filled.time_s == 600  # the cell's time stays
    assert sources == {"account": "SBATCH_ACCOUNT"}
    assert validation.check(filled, alvis) == []


def test_a_bad_default_names_the_variable() -> None:
    with pytest.raises(InvalidRequest, match=r"SBATCH_TIMELIMIT='soon' in the environment"):
        se.with_defaults(ResourceRequest(), {"SBATCH_TIMELIMIT": "soon"})


def test_the_docs_table_is_the_data() -> None:
    from pathlib import Path

    page = (Path(__file__).parents[2] / "docs" / "slurm-environment.md").read_text()
    for pattern, why in (*se.LEAKED, *se.FORMATTING):
        assert f"| `{pattern}` | {why} |" in page, pattern
