"""Pure parts: squeue/scontrol parsing, the server status, idle arithmetic, the widget's view."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

import pytest

from hpc_magics.scheduler.own_job import OwnJob, own_job, own_job_id
from hpc_magics.scheduler.server_status import ServerStatus, server_status
from hpc_magics.scheduler.slurm_text import (
    parse_scontrol_job,
    parse_squeue,
    slurm_duration,
    slurm_timestamp,
)
from hpc_magics.server.idle import last_activity, server_activity
from hpc_magics.widgets.server_view import STOP_JOB, STOP_NOTHING, STOP_SERVER, server_view


@pytest.mark.parametrize(("text", "seconds"), [
    ("0:00", 0), ("1:23", 83), ("20:00", 1200), ("1:02:03", 3723), ("2-03:04:05", 183845),
    ("1-00:00:00", 86400), ("3-4", 3 * 86400 + 4 * 3600), ("UNLIMITED", None), ("N/A", None),
    ("INVALID", None), ("", None),
])
def test_slurm_duration(text: str, seconds: int | None) -> None:
    assert slurm_duration(text) == seconds


def test_slurm_timestamp_is_local_time() -> None:
    expected = dt.datetime(2026, 11, 22, 14, 30, 5).timestamp()
    assert slurm_timestamp("2026-11-22T14:30:05") == expected
    assert slurm_timestamp("1795308988") == 1795308988.0
    for nothing in ("N/A", "Unknown", "", "None", "0"):
        assert slurm_timestamp(nothing) is None


def test_parse_squeue_keeps_pipes_in_names_and_skips_junk() -> None:
    text = (
        "41|RUNNING|debug|1|2:03|20:00|2026-11-22T14:30:05|None|2026-11-22T14:10:05|"
        "2026-11-22T14:10:01|jupyter\n"
        "42|PENDING|long|2|0:00|2-00:00:00|N/A|Priority|N/A|2026-11-22T14:11:00|my|odd name\n"
        "garbage line\n"
        "43_7|CANCELLED by 0|debug|1|0:10|UNLIMITED|N/A|(null)|N/A|N/A|array\n"
    )
    first, second, third = parse_squeue(text)
    assert first.job_id == "41" and first.state == "RUNNING" and first.name == "jupyter"
    assert first.elapsed_s == 123 and first.time_limit_s == 1200
    assert first.end_time == dt.datetime(2026, 11, 22, 14, 30, 5).timestamp()
    assert first.reason == ""
    assert first.submit_time == dt.datetime(2026, 11, 22, 14, 10, 1).timestamp()
    assert second.name == "my|odd name" and second.nodes == "2" and second.reason == "Priority"
    assert second.time_limit_s == 172800 and second.end_time is None
    assert third.job_id == "43_7" and third.state == "CANCELLED" and third.time_limit_s is None
    assert third.submit_time is None


def test_parse_scontrol_job_one_line_record() -> None:
    text = ("JobId=12 JobName=jupyter UserId=root(0) JobState=RUNNING Partition=debug "
            "StartTime=2026-11-22T14:10:05 EndTime=2026-11-22T14:30:05 NumNodes=1 NumCPUs=1")
    info = parse_scontrol_job(text)
    assert info["EndTime"] == "2026-11-22T14:30:05" and info["NumNodes"] == "1"
    assert info["JobName"] == "jupyter"


def test_own_job_from_environment_alone_asks_no_scheduler() -> None:
    calls: list[object] = []
    env = {"SLURM_JOB_ID": "77", "SLURM_JOB_NAME": "lab", "SLURM_JOB_PARTITION": "normal",
           "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_START_TIME": "1795300000",
           "SLURM_JOB_END_TIME": "1795303600"}
    job = own_job(env, runner=lambda *a, **k: calls.append(a))  # type: ignore[arg-type]
    assert job == OwnJob("77", "lab", "normal", 2, 1795300000.0, 1795303600.0)
    assert calls == []
    assert own_job_id({"SLURM_JOB_ID": "12; rm -rf /"}) is None
    assert own_job_id({"SLURM_JOBID": "13"}) == "13"


def test_server_status_in_and_out_of_a_job() -> None:
    now = 1_000_000.0
    job = OwnJob("5", "lab", "debug", 2, start_time=now - 1800, end_time=now + 5400)
    status = server_status(job, now, idle_stop_minutes=60, idle_stop_at=now + 3600,
                           idle_warning_minutes=5)
    assert status.seconds_left == 5400
    assert status.node_hours_used == 1.0 and status.node_hours_total == 4.0
    assert status.idle_stop_at == now + 3600
    round_trip = ServerStatus.from_json(status.to_json() | {"unknown_field": 1})
    assert round_trip == status
    outside = server_status(None, now)
    assert outside.in_slurm_job is False and outside.job_id is None
    assert outside.idle_stop_minutes is None and outside.idle_stop_at is None
    ended = server_status(OwnJob("5", end_time=now - 10), now)
    assert ended.seconds_left == 0 and ended.node_hours_used is None


def test_last_activity_counts_busy_kernels_and_the_latest_activity() -> None:
    now = 10_000.0
    kernels = {"a": SimpleNamespace(execution_state="idle")}
    manager = SimpleNamespace(list_kernel_ids=lambda: list(kernels), get_kernel=kernels.get,
                              last_kernel_activity=dt.datetime.fromtimestamp(9_000.0))
    settings = {"terminal_last_activity": 8_500.0, "api_last_activity": 9_900.0,
                "last_activity_times": {"x": 7_000.0}}
    app = SimpleNamespace(kernel_manager=manager, web_app=SimpleNamespace(settings=settings))

    def latest() -> float:
        return last_activity(8_000, now, *server_activity(app))

    assert latest() == 9_000  # polling GETs (api_...) left out
    manager.last_kernel_activity = None
    assert latest() == 8_500
    kernels["b"] = SimpleNamespace(execution_state="busy")
    assert latest() == now


def test_server_view_counts_down_and_warns() -> None:
    now = 1_000_000.0
    status = server_status(OwnJob("1234", "lab", "debug", 1, now - 3600, now + 2 * 3600 + 41 * 60),
                           now)
    view = server_view(status, now, STOP_SERVER)
    assert view.headline == "job 1234 · 2h41m left · 1.0 node-h"
    assert view.warning is None and view.can_stop
    assert "cancel its Slurm job 1234" in view.confirm_text
    later = server_view(status, now + 2 * 3600 + 30 * 60, STOP_SERVER)
    assert later.headline.startswith("job 1234 · 11m left")
    assert later.warning is not None and "Less than 15 minutes" in later.warning
    last = server_view(status, now + 2 * 3600 + 38 * 60, STOP_SERVER)
    assert last.warning is not None and "Less than 5 minutes" in last.warning


def test_server_view_stop_targets() -> None:
    now = 1_000_000.0
    in_job = server_status(OwnJob("9"), now)
    assert server_view(in_job, now, STOP_JOB).stop_label == "Cancel job 9"
    outside = server_status(None, now)
    assert server_view(outside, now, STOP_NOTHING).can_stop is False
    assert server_view(outside, now, STOP_JOB).can_stop is False
    outside_view = server_view(outside, now, STOP_SERVER)
    assert outside_view.can_stop and "Slurm job" not in outside_view.confirm_text
    assert outside_view.headline == "This Jupyter server is not running in a Slurm job"


def test_view_html_escapes_job_names() -> None:
    now = 1_000_000.0
    status = server_status(OwnJob("3", job_name="<script>x</script>"), now)
    assert "<script>" not in server_view(status, now, STOP_JOB).html()
