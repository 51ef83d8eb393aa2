"""Efficiency figures from sacct's own spelling, GPU samples, advice rules, plain reasons,
and the widget's story line: pure functions, no cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpc_magics.core.efficiency import (
    Usage,
    advice,
    parse_gpu_samples,
    parse_usage,
    report,
    sacct_megabytes,
)
from hpc_magics.core.jobs import plain_reason
from hpc_magics.core.units import slurm_seconds
from hpc_magics.widgets.job_view import JobView

# as `sacct -n -P -o USAGE_FIELDS` printed it for real jobs on the test cluster (22.05),
# plus an array with its steps and an older Slurm's per-CPU ReqMem
SACCT = """\
533|COMPLETED|2026-11-23T17:57:04|0:0|00:00:47|00:03:00|00:40.635||1G|1|billing=1,cpu=1,mem=1G,node=1|c1|wrap
533.batch|COMPLETED|2026-11-23T17:57:04|0:0|00:00:47||00:40.635|333504K||1|cpu=1,mem=1G,node=1|c1|batch
700_1|TIMEOUT|2026-11-23T17:57:04|0:0|01:00:05|01:00:00|00:00:00||4000Mc|4|billing=4,cpu=4,gres/gpu=2,mem=16000M,node=1|c2|my|job
700_1.batch|CANCELLED|2026-11-23T17:57:04|0:15|01:00:06||1:02:03.5|2.5G||4|cpu=4,mem=16000M,node=1|c2|batch
700_1.0|CANCELLED|2026-11-23T17:57:04|0:15|01:00:06||03:00:00|1200M||4|cpu=4,mem=16000M,node=1|c2|python
garbage
"""


def test_sacct_units() -> None:
    assert slurm_seconds("00:40.635") == pytest.approx(40.635)
    assert slurm_seconds("1-02:00:00") == 93600
    assert slurm_seconds("2-04") == 2 * 86400 + 4 * 3600
    assert slurm_seconds("UNLIMITED") is None and slurm_seconds("Partition_Limit") is None
    assert sacct_megabytes("333504K") == pytest.approx(325.6875)
    assert sacct_megabytes("1.5G") == 1536 and sacct_megabytes("4000Mc", cpus=4) == 16000
    assert sacct_megabytes("2Gn") == 2048 and sacct_megabytes("lots") is None


def test_parse_usage_folds_steps_into_jobs_and_tasks() -> None:
    job, task = parse_usage(SACCT)
    assert (job.job_id, job.state, job.alloc_cpus, job.req_mem_mb) == ("533", "COMPLETED", 1, 1024)
    assert job.max_rss_mb == pytest.approx(325.6875) and job.total_cpu_s == pytest.approx(40.635)
    assert job.cpu_efficiency == pytest.approx(40.635 / 47)
    assert task.job_id == "700_1" and task.name == "my|job" and task.gpus == 2
    assert task.req_mem_mb == 16000 and task.max_rss_mb == 2560  # the largest step's peak
    assert task.total_cpu_s == pytest.approx(3723.5 + 10800)  # the job line had none
    assert task.time_fraction == pytest.approx(3605 / 3600)


def test_advice_names_the_waste_and_the_fix() -> None:
    big = Usage("1", "COMPLETED", elapsed_s=3000, time_limit_s=3600, total_cpu_s=2900,
                max_rss_mb=3.1 * 1024, req_mem_mb=64 * 1024, alloc_cpus=1)
    assert advice(big, None) == ("asked 64.0G, peak 3.1G: --mem 5G would start sooner and "
                                 "cost less")
    idle_cpus = Usage("2", "COMPLETED", elapsed_s=600, time_limit_s=900, total_cpu_s=1200,
                      max_rss_mb=900, req_mem_mb=1024, alloc_cpus=8)
    assert advice(idle_cpus, None).startswith("8 CPUs asked, 25% of them busy: -c 3 ")
    timeout = Usage("3", "TIMEOUT", elapsed_s=3600, time_limit_s=3600)
    assert "hit its time limit (1h00m)" in advice(timeout, None)
    long_limit = Usage("4", "COMPLETED", elapsed_s=600, time_limit_s=86400, total_cpu_s=590,
                       max_rss_mb=900, req_mem_mb=1024, alloc_cpus=1)
    assert advice(long_limit, None).startswith("asked 1d of time, used 10m: -t 20 ")
    well_sized = Usage("5", "COMPLETED", elapsed_s=3000, time_limit_s=3600, total_cpu_s=2900,
                       max_rss_mb=800, req_mem_mb=1024, alloc_cpus=1)
    assert advice(well_sized, None) == ""


def test_gpu_samples_and_their_summary() -> None:
    text = ("2026/11/23 18:00:00.123, 0, 10, 1000, 16384\n"
            "2026/11/23 18:00:05.123, 0, 30, 3000, 16384\n"
            "2026/11/23 18:00:10.1, 0, [N/A], 3000, 16384\n"  # a value the driver lacked
            "2026/11/23 18:00:10.1, 0, 2")  # cut short by the job's end
    samples = parse_gpu_samples(text)
    assert [(s.seconds, s.utilisation) for s in samples] == [(0, 10), (5, 30)]
    usage = Usage("6", "COMPLETED", elapsed_s=600, time_limit_s=900, total_cpu_s=590,
                  max_rss_mb=900, req_mem_mb=1024, alloc_cpus=1, gpus=1)
    done = report(usage, samples)
    assert any("GPU utilisation 20% on average over 1 GPU, memory peak 2.9G of 16.0G" in line
               for line in done.lines)
    assert done.advice.startswith("1 GPU(s) busy 20% of the time on average")
    assert any("no samples" in line for line in report(usage).lines)


def test_pending_reasons_in_plain_words() -> None:
    assert "--begin" in plain_reason("BeginTime")
    assert "higher-priority" in plain_reason("(Priority)")
    assert plain_reason("SomethingNew") == "SomethingNew" and plain_reason("") == ""


def test_story_line_while_pending_running_and_never_after() -> None:
    pending = JobView("9", "t", "PENDING", "slurm", "/x", False, reason="Resources",
                      start_time=1000.0 + 720)
    assert pending.story(now=1000.0).startswith("pending: waiting for free nodes")
    assert "(in 12m)" in pending.story(now=1000.0)
    running = JobView("9", "t", "RUNNING", "slurm", "/x", False, elapsed_s=300,
                      time_limit_s=1200, node_list="c[1-2]")
    assert running.story() == "running on c[1-2] · 5m of 20m · 15m left"
    assert running.progress == pytest.approx(0.25) and running.can_cancel
    done = JobView("9", "t", "COMPLETED", "slurm", "/x", False, elapsed_s=300, time_limit_s=1200)
    assert done.story() == "" and done.progress is None and not done.can_cancel


def test_slurmdbds_placeholder_record_is_not_taken_for_the_jobs_figures() -> None:
    """For ~1 s after a short job ends, sacct shows slurmdbd's placeholder (as printed on the
    test cluster): final state, but no time limit, ReqMem "16?", named "allocation". The
    figures must be asked for again, not settled (usage.json once said "of n/a asked")."""
    from dataclasses import asdict

    from hpc_magics.scheduler.accounting import _settled, parse_accounting

    placeholder = ("3614|COMPLETED|2026-11-23T21:25:24|0:0|00:00:00||00:00.548||16?|1|"
                   "billing=1,cpu=1,mem=1G,node=1|c1|allocation\n")
    complete = ("3614|COMPLETED|2026-11-23T21:25:24|0:0|00:00:00|00:10:00|00:00.548||1G|1|"
                "billing=1,cpu=1,mem=1G,node=1|c1|longer-run\n")
    (early,), (later,) = parse_usage(placeholder), parse_usage(complete)
    assert early.provisional and not later.provisional and later.req_mem_mb == 1024

    def answer(text: str, final_before: bool) -> dict[str, object]:
        return {"records": [asdict(r) for r in parse_accounting(text)],
                "final_before": final_before}

    assert not _settled(answer(placeholder, False)) and not _settled(answer(placeholder, True))
    assert _settled(answer(complete, False))


def test_a_task_that_started_as_its_array_was_cancelled_is_not_also_in_the_pending_range(
        ) -> None:
    """slurmdbd keeps the pending range as it was a second before the cancel (sacct on the
    test cluster, for good): ``10034_1`` beside ``10034_[1-3%1]``. The efficiency report
    listed point 1 twice; the range stands for the tasks that never started."""
    from hpc_magics.scheduler.accounting import parse_accounting

    tail = "|00:05:00|00:00.028||1000M|1|billing=1,cpu=1,mem=1000M,node=1|c1|halfway\n"
    text = ("10034_0|COMPLETED|2026-11-28T09:54:06|0:0|00:00:04" + tail
            + "10034_1|CANCELLED by 1001|2026-11-28T09:54:06|0:0|00:00:01" + tail
            + "10034_1.batch|CANCELLED|2026-11-28T09:54:11|0:15|00:00:01||00:00.004|||1|"
              "cpu=1,mem=1000M,node=1|c1|batch\n"
            + "10034_[1-3%1]|CANCELLED by 1001|2026-11-28T09:54:06|0:0|00:00:00|00:05:00|"
              "00:00:00||1000M|1||None assigned|halfway\n")
    records = parse_accounting(text)
    assert [r.job_id for r in records] == ["10034_0", "10034_1", "10034_[2-3%1]"]
    assert [r.usage.job_id for r in records if r.usage] == [r.job_id for r in records]
    assert records[2].state == "CANCELLED" and records[2].submit_time == records[0].submit_time
    # every task of the range started: no record stands for none
    assert [r.job_id for r in parse_accounting(text.replace("[1-3%1]", "[1]"))] == \
        ["10034_0", "10034_1"]


def test_a_short_tasks_cpu_time_is_not_zero_beside_its_efficiency() -> None:
    # as sacct reported a 1-second sweep task on the test cluster: 0.444 s of CPU on 1 CPU
    short = Usage("3586_0", "COMPLETED", elapsed_s=1, time_limit_s=7200, total_cpu_s=0.444,
                  req_mem_mb=1000, alloc_cpus=1)
    assert report(short).lines[1] == "CPU efficiency 44% (0.4s of CPU time on 1 CPU)"
    long = Usage("9", "COMPLETED", elapsed_s=600, time_limit_s=900, total_cpu_s=1200,
                 alloc_cpus=4)
    assert report(long).lines[1] == "CPU efficiency 50% (20m of CPU time on 4 CPUs)"


def test_an_arrays_tasks_summed_up_then_the_first_ones_one_by_one() -> None:
    from hpc_magics.core.efficiency import array_summary
    from hpc_magics.widgets.efficiency import SHOWN_TASKS, report_text

    # as a sweep of 8 one-second tasks that asked for 2 hours reported on the test cluster
    tasks = [report(Usage(f"3617_{i}", "COMPLETED", elapsed_s=1, time_limit_s=7200,
                          total_cpu_s=0.39 + i / 100, req_mem_mb=1000, alloc_cpus=1))
             for i in range(6)]
    assert array_summary(tasks) == (
        "6 tasks: 6 COMPLETED; CPU efficiency 39%-44%; memory peak n/a; time 1s of 2h00m",
        "advice for 6 of 6 tasks: asked 2h00m of time, used 1s: -t 1 would start sooner "
        "(backfill fits short jobs first)")
    many = [*tasks * 4, report(Usage("3617_99", "FAILED", elapsed_s=120, time_limit_s=7200,
                                     total_cpu_s=60, max_rss_mb=512, req_mem_mb=1000,
                                     alloc_cpus=1))]
    summary = array_summary(many)
    assert summary[0].startswith("25 tasks: 24 COMPLETED, 1 FAILED; CPU efficiency 39%-50%; "
                                 "memory peak 512M; time 1s-2m of 2h00m"), summary
    assert summary[1].startswith("advice for 24 of 25 tasks: asked 2h00m"), summary
    text = report_text([(r, ()) for r in many]).splitlines()
    assert text[:2] == list(summary) and text[2] == ""
    assert len([line for line in text if line.startswith("task ")]) == SHOWN_TASKS
    assert text[-1] == f"({25 - SHOWN_TASKS} more tasks, in the summary above)"


def test_tasks_in_index_order_a_range_of_those_never_started_by_its_first(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from hpc_magics.widgets.efficiency import reports

    ids = ["5000_[2-3%1]", "5000_1", "5000_0", "5000_10"]
    found = reports(SimpleNamespace(path=tmp_path, meta=dict), [Usage(i, "CANCELLED") for i in ids])
    assert [item.usage.job_id for item, _ in found] == ["5000_0", "5000_1", "5000_[2-3%1]",
                                                        "5000_10"]
