"""What the node side records about its job (cgroup limit and peak, getrusage, GPU samples
per node) and how the notebook reads it back. Pure: no cluster (the release clusters'
tests in tests/sites/test_release_node_facts.py check the same on real cgroups)."""

from __future__ import annotations

import json
from pathlib import Path

from hpc_magics.core.efficiency import Usage, report
from hpc_magics.core.jobs import end_hint
from hpc_magics.core.node_records import (
    bytes_value,
    explaining_step_state,
    memory_cgroup_dir,
    memory_limit_mb,
    node_file,
    node_peak,
    read_records,
)
from hpc_magics.jobfacts import end_reason
from hpc_magics.jobfolder.files import read_tail
from hpc_magics.jobfolder.folder import JobFolder
from hpc_magics.widgets.efficiency import gpu_samples, reports
from hpc_magics.widgets.telemetry import memory_lines

# /proc/self/cgroup as a task of job 126 on a release cluster's node c1 saw it (the node
# sees its hierarchy from below "/hpcm-2411-c1"), trimmed to the lines that matter
V1_PROC_CGROUP = ("5:devices:/hpcm-2411-c1/slurm_c1/uid_1001/job_126/step_0\n"
                  "4:memory:/hpcm-2411-c1/slurm_c1/uid_1001/job_126/step_0/task_0\n0::/\n")
V2_PROC_CGROUP = "0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n"


def test_the_jobs_memory_cgroup_is_found_from_below_a_containers_root() -> None:
    seen = {"/sys/fs/cgroup/memory/slurm_c1/uid_1001/job_126"}
    assert memory_cgroup_dir(V1_PROC_CGROUP, seen.__contains__) == (
        "/sys/fs/cgroup/memory/slurm_c1/uid_1001/job_126", "v1")
    whole = "/sys/fs/cgroup/memory/hpcm-2411-c1/slurm_c1/uid_1001/job_126"
    assert memory_cgroup_dir(V1_PROC_CGROUP, {whole, *seen}.__contains__) == (whole, "v1")
    v2 = "/sys/fs/cgroup/system.slice/slurmstepd.scope/job_7"
    assert memory_cgroup_dir(V2_PROC_CGROUP, {v2}.__contains__) == (v2, "v2")
    assert memory_cgroup_dir(V1_PROC_CGROUP, lambda _: False) is None
    assert memory_cgroup_dir("4:memory:/user.slice\n", lambda _: True) is None  # no job


def test_cgroup_numbers_and_no_limit() -> None:
    assert bytes_value("314572800\n") == 314572800
    assert bytes_value("max\n") is None
    assert bytes_value("9223372036854771712") is None  # cgroup v1's "no limit"


def test_the_cgroup_peak_is_preferred_to_getrusage_and_cut_records_are_skipped() -> None:
    records = read_records([
        json.dumps({"host": "c1", "rank": "0", "limit_mb": 1000.0, "rusage_peak_mb": 290.0,
                    "cgroup_peak_mb": 305.5}),
        json.dumps({"host": "c2", "rank": "1", "limit_mb": 1000.0, "rusage_peak_mb": 400.0,
                    "cgroup_peak_mb": 410.0}),
        '{"host": "c3", "limit_m',  # the kernel ended the task mid-write
    ])
    peak = node_peak(records)
    assert peak is not None and peak.megabytes == 410.0
    assert peak.source == "the job's cgroup on the node"
    only_rusage = node_peak([{"host": "c1", "rusage_peak_mb": 290.0, "limit_mb": None}])
    assert only_rusage is not None and only_rusage.source.startswith("getrusage")
    assert node_peak([{"host": "c1", "limit_mb": 1000.0}]) is None  # the start record only
    assert memory_limit_mb(records) == 1000.0


def test_out_of_memory_is_one_line_naming_the_limit_and_the_flag() -> None:
    assert end_hint("OUT_OF_MEMORY", 1024, 1024.0) == (
        "the job ran out of memory: it was limited to 1024M (--mem=1G); ask for more with --mem")
    assert end_hint("OUT_OF_MEMORY", 1000, None) == (
        "the job ran out of memory: it was limited to 1000M (its --mem); ask for more with --mem")
    assert "partition's default memory" in end_hint("OUT_OF_MEMORY")


def test_the_handle_reads_the_limit_the_node_recorded(tmp_path: Path) -> None:
    folder = JobFolder(tmp_path)
    folder.write_meta({"job_id": "42", "request": {"mem_mb": 1024}})
    (tmp_path / node_file("42", "c1", "0")).write_text(json.dumps({"host": "c1",
                                                                   "limit_mb": 1024.0}))
    assert end_reason(folder, "42", "OUT_OF_MEMORY") == (
        "the job ran out of memory: it was limited to 1024M (--mem=1G); ask for more with --mem")
    # another job's record is not this one's
    assert "1024M" not in end_reason(folder, "43", "OUT_OF_MEMORY")


def test_the_report_takes_the_nodes_peak_when_accounting_has_none(tmp_path: Path) -> None:
    usage = Usage(job_id="42", state="COMPLETED", elapsed_s=7, time_limit_s=60,
                  total_cpu_s=6.5, req_mem_mb=1024, alloc_cpus=1)
    assert "memory peak not sampled" in "\n".join(report(usage).lines)
    (tmp_path / node_file("42", "c1", "0")).write_text(json.dumps(
        {"host": "c1", "limit_mb": 1024.0, "rusage_peak_mb": 301.0, "cgroup_peak_mb": 306.0}))
    [(done, _)] = reports(JobFolder(tmp_path), [usage])
    assert ("memory peak 306M of 1.0G asked (30%; from the job's cgroup on the node; "
            "accounting had no sample)") in done.lines
    # seen on 24.11: sacct's only sample was taken before the cell grew
    early = Usage(job_id="42", state="COMPLETED", req_mem_mb=1024, max_rss_mb=4.0)
    [(from_node, _)] = reports(JobFolder(tmp_path), [early])
    assert ("memory peak 306M of 1.0G asked (30%; from the job's cgroup on the node; "
            "accounting sampled 4M)") in from_node.lines
    later = Usage(job_id="42", state="COMPLETED", req_mem_mb=1024, max_rss_mb=500.0)
    [(from_sacct, _)] = reports(JobFolder(tmp_path), [later])
    assert "memory peak 500M of 1.0G asked (49%)" in from_sacct.lines  # sacct saw more


def test_gpu_samples_of_every_node_count_each_nodes_gpu(tmp_path: Path) -> None:
    line = "2026/11/25 21:00:0{s}.000, 0, {u}, 2048, 16384\n"
    for host, used in (("c1", 40), ("c2", 60)):
        (tmp_path / f"gpu-42.{host}.csv").write_text(
            "".join(line.format(s=s, u=used) for s in (0, 5)))
    (tmp_path / "gpu-420.c1.csv").write_text(line.format(s=0, u=99))  # another job's
    samples = gpu_samples(JobFolder(tmp_path), "42")
    assert sorted({s.index for s in samples}) == ["c1:0", "c2:0"]
    [(done, _)] = reports(JobFolder(tmp_path), [Usage(job_id="42", state="COMPLETED")])
    assert any("GPU utilisation 50% on average over 2 GPUs" in x for x in done.lines)


def test_a_step_killed_for_memory_explains_its_jobs_failure() -> None:
    # sacct -n -P -o JobID,State -j 152 on release 24.11, a cell over its --mem of 200M
    steps = "152|FAILED\n152.batch|FAILED\n152.0|OUT_OF_MEMORY\n"
    assert explaining_step_state("FAILED", steps) == "OUT_OF_MEMORY"
    assert explaining_step_state("FAILED", "152|FAILED\n152.0|FAILED\n") == "FAILED"
    assert explaining_step_state("TIMEOUT", steps) == "TIMEOUT"  # only a FAILED job's


def test_the_live_memory_line_reads_only_the_end_of_the_samples(tmp_path: Path) -> None:
    samples = tmp_path / "mem-42.c1.csv"
    samples.write_text("".join(f"{1_700_000_000 + i},{100 + i},{900 + i}\n" for i in range(1000)))
    lines = read_tail(samples, 100)  # 21 bytes a line: the cut first one is left out
    assert lines == [f"{1_700_000_000 + i},{100 + i},{900 + i}" for i in range(996, 1000)]
    [line] = memory_lines(JobFolder(tmp_path), "42")
    # now and the whole run's peak from the last sample; no request known: no "of"
    assert line.startswith("memory <svg") and line.endswith("now 1.1G · peak 1.9G")
