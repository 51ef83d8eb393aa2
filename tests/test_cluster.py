"""The test cluster really offers what hpc_magics and its tests rely on."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from hpc_magics.core.profiles import load_profile
from hpc_magics.core.units import parse_time
from hpc_magics.scheduler import commands

if TYPE_CHECKING:  # fixture types only; test modules do not import conftest at run time
    from conftest import OtherUser, SacctState, SlurmCluster

JOB_TIMEOUT_S = 60


def slurm(*argv: str, cwd: Path | None = None) -> commands.CommandResult:
    if cwd is None:
        return commands.run(argv, timeout=JOB_TIMEOUT_S)
    # commands.run has no cwd: say where the job runs with --chdir instead
    return commands.run([argv[0], f"--chdir={cwd}", *argv[1:]], timeout=JOB_TIMEOUT_S)


def node_table() -> dict[str, dict[str, str]]:
    answer = slurm("sinfo", "-h", "-N", "-p", "debug", "-o", "%N|%t|%c|%m|%G")
    assert answer.ok, answer.first_error_line()
    table = {}
    for line in answer.stdout.split():
        name, state, cpus, mem, gres = line.split("|")
        table[name] = {"state": state, "cpus": cpus, "mem": mem, "gres": gres}
    return table


def job_id_of(submitted: commands.CommandResult) -> str:
    assert submitted.ok, submitted.first_error_line()
    return submitted.stdout.split()[-1]  # "Submitted batch job 42"


def test_two_nodes_up_with_fake_v100s(slurm_cluster: SlurmCluster) -> None:
    nodes = node_table()
    assert sorted(nodes) == list(slurm_cluster.nodes)
    for name, node in nodes.items():
        # idle unless a job of another test is still finishing on it
        assert node["state"] in {"idle", "mix", "alloc", "comp"}, f"{name} is {node['state']}"
        assert node["gres"] == "gpu:v100:2", name


def test_cluster_matches_the_lab_profile(slurm_cluster: SlurmCluster) -> None:
    profile = load_profile(slurm_cluster.profile)
    assert profile.default_partition == slurm_cluster.default_partition
    answer = slurm("sinfo", "-h", "-o", "%P|%l")
    assert answer.ok, answer.first_error_line()
    limits = dict(line.split("|") for line in answer.stdout.split())
    assert limits.keys() == {"debug*", "long"}
    for node in node_table().values():
        for name, partition in profile.partitions.items():
            assert parse_time(limits[name + "*" if name == "debug" else name]) \
                == partition.max_time_s, name
            assert int(node["cpus"]) == partition.cpus_per_node, name
            assert int(node["mem"]) == partition.mem_per_node_mb, name
            assert node["gres"] == f"gpu:{partition.gpu_types[0]}:{partition.gpus_per_node}"


def test_gpu_job_gets_cuda_visible_devices(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    done = slurm("sbatch", "--wait", "--gres=gpu:v100:1", "-t", "1", "-o", "out.txt",
                 "--wrap", "echo CUDA=$CUDA_VISIBLE_DEVICES", cwd=tmp_path)
    job_id_of(done)
    assert (tmp_path / "out.txt").read_text().strip() == "CUDA=0"


def test_jobs_write_output_outside_tmp(slurm_cluster: SlurmCluster) -> None:
    # jobs submitted from a folder of the user's outside /tmp (their home) write there
    with tempfile.TemporaryDirectory(dir=Path.home(), prefix=".test-cluster-") as folder:
        done = slurm("sbatch", "--wait", "-t", "1", "-o", "out.txt", "--wrap", "pwd",
                     cwd=Path(folder))
        job_id_of(done)
        assert (Path(folder) / "out.txt").read_text().strip() == folder


def test_time_above_partition_limit_is_rejected_at_submission(
        slurm_cluster: SlurmCluster) -> None:
    rejected = slurm("sbatch", "-p", "debug", "-t", "30", "--wrap", "true")
    assert not rejected.ok, f"debug accepted a 30 min job: {rejected.stdout}"
    assert "time limit" in rejected.stderr.lower()
    accepted = slurm("sbatch", "--test-only", "-p", "long", "-t", "30", "--wrap", "true")
    assert accepted.ok, accepted.first_error_line()


def test_sacct_reports_finished_jobs(slurm_cluster: SlurmCluster, tmp_path: Path,
                                     sacct_state: SacctState) -> None:
    completed = job_id_of(slurm("sbatch", "--wait", "-t", "1", "-o", "/dev/null",
                                "--wrap", "true", cwd=tmp_path))
    assert sacct_state(completed, until={"COMPLETED"}) == "COMPLETED"
    failed = slurm("sbatch", "--wait", "-t", "1", "-o", "/dev/null", "--wrap", "exit 3",
                   cwd=tmp_path)
    assert failed.returncode != 0
    assert sacct_state(failed.stdout.split()[-1], until={"FAILED"}) == "FAILED"


def test_two_node_srun_spans_both_nodes(slurm_cluster: SlurmCluster) -> None:
    answer = slurm("srun", "-N2", "--ntasks-per-node=1", "-t", "1",
                   "printenv", "SLURMD_NODENAME")
    assert answer.ok, answer.first_error_line()
    assert sorted(answer.stdout.split()) == list(slurm_cluster.nodes)


@pytest.mark.parametrize("partition", ["debug", "long"])
def test_both_partitions_run_jobs(slurm_cluster: SlurmCluster, partition: str) -> None:
    answer = slurm("srun", "-p", partition, "-t", "1", "printenv", "SLURM_JOB_PARTITION")
    assert answer.ok, answer.first_error_line()
    assert answer.stdout.strip() == partition


def test_users_control_their_own_jobs_only(slurm_cluster: SlurmCluster, unprivileged_user: str,
                                           second_user: OtherUser,
                                           sacct_state: SacctState) -> None:
    sleeper = ("sbatch", "--parsable", "-t", "2", "--chdir=/tmp", "-o", "/dev/null",
               "--wrap", "sleep 120")
    theirs = second_user.run(*sleeper).stdout.strip()
    mine = slurm(*sleeper)
    assert mine.ok, mine.first_error_line()
    mine_id = mine.stdout.strip()
    try:
        listed = slurm("squeue", "-h", "-u", unprivileged_user, "-o", "%i|%u")
        assert listed.ok, listed.first_error_line()
        assert f"{mine_id}|{unprivileged_user}" in listed.stdout.split()
        assert theirs not in listed.stdout
        sacct_state(mine_id)  # accounting knows the job (it lags the scheduler)
        accounting = slurm("sacct", "-n", "-X", "-P", "-j", mine_id, "-o", "User,Account")
        assert accounting.stdout.split() == [f"{unprivileged_user}|hpcproj"]
        refused = slurm("scancel", theirs)
        assert not refused.ok and "Access/permission denied" in refused.stderr
        assert sacct_state(theirs) in {"PENDING", "RUNNING"}
        assert slurm("scancel", mine_id).ok
        assert sacct_state(mine_id, until={"CANCELLED"}) == "CANCELLED"
    finally:
        second_user.run("scancel", theirs, check=False)
        slurm("scancel", mine_id)
