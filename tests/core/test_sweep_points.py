"""Sweep points, array ranges and splits, site limits and dependencies (pure)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hpc_magics.core import sweep
from hpc_magics.core.errors import InvalidRequest
from hpc_magics.core.jobids import JobIndex, same_job
from hpc_magics.core.jobscript import cell_parts, header_lines, render
from hpc_magics.core.profiles import load_profile
from hpc_magics.core.resources import ResourceRequest
from hpc_magics.jobfolder.files import OUTCOME_FILE
from hpc_magics.jobfolder.tasks import task_dir, task_outcome


def test_the_product_of_the_values_as_python_literals() -> None:
    points = sweep.sweep_points(["lr=1e-3,1e-4", "batch=32,64"])
    assert points == [{"lr": 0.001, "batch": 32}, {"lr": 0.001, "batch": 64},
                      {"lr": 0.0001, "batch": 32}, {"lr": 0.0001, "batch": 64}]


@pytest.mark.parametrize(("spec", "values"), [
    ("opt=adam,sgd", ["adam", "sgd"]),
    ("opt='adam,sgd'", ["adam", "sgd"]),  # IPython keeps the quotes
    ("x=[1,2,3]", [1, 2, 3]),
    ("s='a,b',c", ["a,b", "c"]),
    ("t=(1,2),x", [(1, 2), "x"]),
    ("flag=True,None,0.5", [True, None, 0.5]),
])
def test_values_are_literals_where_they_read_as_one(spec: str, values: list[object]) -> None:
    assert sweep.parse_sweep(spec)[1] == values


@pytest.mark.parametrize(("spec", "message"), [
    ("lr", "has no '='"), ("lr=", "has no values"), ("lr=1,,2", "has an empty value"),
    ("1x=2", "not a Python variable name"),
    ("class=1", "not a Python variable name"),
])
def test_bad_sweeps_name_the_value_and_the_fix(spec: str, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message) as raised:
        sweep.parse_sweep(spec)
    assert "write --sweep" in str(raised.value) or "use a name" in str(raised.value)


def test_points_from_a_list_of_dicts_a_dict_of_lists_and_with_a_grid() -> None:
    assert sweep.points_from("p", [{"a": 1}, {"a": 2, "b": 3}]) == [{"a": 1}, {"a": 2, "b": 3}]
    assert sweep.points_from("p", {"a": [1, 2], "b": ("x", "y")}) == [{"a": 1, "b": "x"},
                                                                {"a": 2, "b": "y"}]
    base = sweep.points_from("p", [{"a": 1}, {"a": 2}])
    assert sweep.sweep_points(["s=0,1"], base) == [{"a": 1, "s": 0}, {"a": 1, "s": 1},
                                                   {"a": 2, "s": 0}, {"a": 2, "s": 1}]
    with pytest.raises(InvalidRequest, match="also a key of --sweep-from"):
        sweep.sweep_points(["a=5"], base)


@pytest.mark.parametrize(("value", "message"), [
    ([], "is empty"), ({}, "is empty"), (5, "is a int"), ([1, 2], "every item must be a dict"),
    ({"a": [1], "b": [1, 2]}, "different lengths"), ({"a": 3}, "'a' is not a list"),
    ([{"not ok": 1}], "not a Python variable name"),
])
def test_wrong_shapes_are_refused(value: object, message: str) -> None:
    with pytest.raises(InvalidRequest, match=message):
        sweep.points_from("p", value)


def test_array_ranges_and_splits() -> None:
    assert sweep.array_range(1) == "0"
    assert sweep.array_range(20, 4) == "0-19%4"
    parts = sweep.split(list(range(2503)), 1001)
    assert [p.size for p in parts] == [1001, 1001, 501]
    assert parts[1].indices[0] == 1001 and parts[2].indices[-1] == 2502
    assert sweep.split([3, 9], 1001)[0].indices == (3, 9)


def test_task_ids_follow_the_latest_attempt() -> None:
    arrays = [{"job_id": "50", "indices": sweep.compress(range(5)), "attempt": 0},
              {"job_id": "61", "indices": sweep.compress([1, 3]), "attempt": 1}]
    assert arrays[1]["indices"] == [[1, 2], [3, 4]]
    assert sweep.task_job_ids(arrays) == {0: "50_0", 1: "61_0", 2: "50_2", 3: "61_1",
                                          4: "50_4"}


def test_a_task_outcome_counts_only_for_the_attempt_that_wrote_it(tmp_path: Path) -> None:
    meta = {"sweep": {"arrays": [{"job_id": "50", "indices": [[0, 5]], "attempt": 0},
                                 {"job_id": "61", "indices": [[1, 2], [3, 4]], "attempt": 1}]}}
    target = task_dir(tmp_path, 3)
    target.mkdir(parents=True)
    assert task_outcome(tmp_path, meta, "50_3") is None  # nothing written yet
    (target / OUTCOME_FILE).write_text(json.dumps({"job_id": "50_3", "failed": True}))
    assert task_outcome(tmp_path, meta, "50_3") is True
    assert task_outcome(tmp_path, meta, "61_1") is None  # the retry has not written yet
    (target / OUTCOME_FILE).write_text(json.dumps({"job_id": "61_1", "failed": False}))
    assert task_outcome(tmp_path, meta, "61_1") is False
    assert task_outcome(tmp_path, meta, "61_7") is None
    assert task_outcome(tmp_path, meta, "50") is None


CONFIG = """Configuration data as of 2026-11-23T18:00:00
AccountingStorageEnforce = associations,limits
MaxArraySize            = 40001
"""


def test_site_limits_from_scontrol_and_sacctmgr() -> None:
    assert sweep.max_array_size(CONFIG) == 40001
    assert sweep.max_array_size("") == sweep.DEFAULT_MAX_ARRAY_SIZE == 1001
    assert sweep.limits_enforced(CONFIG)
    assert not sweep.limits_enforced("AccountingStorageEnforce = none\n")
    associations = "proj1|500|normal,gpu\nproj2|50|normal\n"
    qos = "normal|\ngpu|200\nlong|10\n"
    assert sweep.max_submit_jobs(associations, qos, "proj1") == (
        200, "MaxSubmitJobsPerUser of QOS gpu")
    assert sweep.max_submit_jobs(associations, qos, "proj2")[0] == 50  # type: ignore[index]
    assert sweep.max_submit_jobs("proj1||normal\n", "normal|\n", "proj1") is None
    sweep.check_submit_limit(10, 5, (15, "here"))
    with pytest.raises(InvalidRequest, match=r"10 tasks and you have 6 jobs queued.*limit of "
                                             r"15 jobs per user \(here\)"):
        sweep.check_submit_limit(10, 6, (15, "here"))


def test_the_array_line_is_in_the_rendered_script() -> None:
    script = render(ResourceRequest(time_s=300), load_profile("lab"),
                    cell_parts("/jobs/a b", "python", "sweep", signal="USR2@0",
                               array=sweep.array_range(20, 5)))
    assert "#SBATCH --array=0-19%5\n" in script
    assert "'/jobs/a b/%A_%a_0_log.out'" in script


def test_a_cells_own_array_line_points_to_the_sweep() -> None:
    request = ResourceRequest(extra=(("array", "0-9"),))
    with pytest.raises(InvalidRequest, match="--sweep"):
        header_lines(request, engine=[("output", "x")])


def test_the_job_index_finds_what_same_job_accepts() -> None:
    """The watcher looks a sweep's tasks up in an index; it must agree with same_job."""
    listed = ["5", "5_1", "5_2", "5_[3-9]", "6+0", "6+1", "7_[1,4%2]", "7_4", "8", "9_3"]
    index = JobIndex(listed, lambda job_id: job_id)
    for wanted in ["5", "5_1", "5_3", "5_9", "5_10", "6", "6+0", "7_4", "7_1", "7",
                   "7_[1-4]", "8", "9", "9_3", "9_4", "10", "not-an-id"]:
        assert sorted(index.find(wanted)) == sorted(j for j in listed if same_job(wanted, j))


def test_a_retried_array_is_waited_for_with_afterany() -> None:
    arrays = [{"job_id": "50", "indices": [[0, 5]], "attempt": 0},
              {"job_id": "51", "indices": [[5, 8]], "attempt": 0},
              {"job_id": "61", "indices": [[3, 4]], "attempt": 1}]
    assert sweep.superseded_arrays(arrays) == {"50"}
