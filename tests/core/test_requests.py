"""Resource requests, profiles, validation and #SBATCH rendering (golden files)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hpc_magics.core import cost, directives, jobscript, validation
from hpc_magics.core.errors import InvalidRequest
from hpc_magics.core.profiles import available_profiles, load_profile
from hpc_magics.core.resources import (
    GpuRequest,
    ResourceRequest,
    from_dict,
    to_dict,
    updated,
)

GOLDEN = Path(__file__).resolve().parent.parent / "golden"

CASES = {
    "alvis_a40": ("alvis", {"gpus_per_node": "A40:1", "time_s": "2h", "account": "NAISS2024-5-1"}),
    "daint_debug": ("daint", {"partition": "debug", "time_s": "30", "nodes": "2",
                              "account": "g123", "constraint": "gpu"}),
    "m3_dgx": ("m3", {"partition": "dgx", "qos": "dgx", "gpus_per_node": "V100:2",
                      "time_s": "1-00:00:00", "mem_mb": "64G", "account": "ml20"}),
    "narval_a100": ("narval", {"gpus_per_node": "a100:4", "time_s": "12:0:0",
                               "account": "def-smith", "cpus_per_task": "32", "mem_mb": "0"}),
    "sdumont_sequana": ("sdumont", {"partition": "sequana_gpu_shared", "gpus_per_node": "2",
                                    "time_s": "04:00:00"}),
    "lab_gpu": ("lab", {"partition": "debug", "gpus_per_node": "v100:1", "time_s": "10",
                        "setup": ["module load python"]}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_sbatch_header_matches_golden_file(case: str) -> None:
    profile_name, values = CASES[case]
    profile = load_profile(profile_name)
    request = updated(ResourceRequest(profile=profile_name), values)
    assert [p for p in validation.check(request, profile) if p.severity == validation.ERROR] == []
    header = jobscript.header_lines(request, profile, "train")
    rendered = "\n".join([profile.shebang, *header]) + "\n"
    golden = GOLDEN / f"{case}.sbatch"
    if os.environ.get("HPC_MAGICS_UPDATE_GOLDEN"):  # regenerate on purpose, then review
        golden.write_text(rendered)
    assert rendered == golden.read_text()


def test_first_five_minutes_cost_line() -> None:
    request = updated(ResourceRequest(profile="alvis"), CASES["alvis_a40"][1])
    assert cost.cost_line(request) == "≈ 2 GPU-h (2 node-h) at most"
    two_nodes = updated(request, {"nodes": "2", "gpus_per_node": "A100:4"})
    assert cost.cost_line(two_nodes) == "≈ 16 GPU-h (4 node-h) at most"
    assert "add -t" in cost.cost_line(ResourceRequest())


def test_every_packaged_profile_loads() -> None:
    names = set(available_profiles())
    assert {"alvis", "daint", "m3", "narval", "sdumont", "generic", "lab"} <= names
    for name in names:
        assert load_profile(name).name == name


def test_user_profile_folder_overrides_packaged(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "alvis.toml").write_text('description = "site copy"\n')
    monkeypatch.setenv("HPC_MAGICS_PROFILE_PATH", str(tmp_path))
    assert load_profile("alvis").description == "site copy"


def test_unknown_profile_names_the_choices() -> None:
    with pytest.raises(InvalidRequest, match=r"profile 'nope' is unknown: use one of .*alvis"):
        load_profile("nope")


def messages(profile: str, **values: str) -> list[str]:
    request = updated(ResourceRequest(profile=profile, backend="slurm"), values)
    return [str(p) for p in validation.check(request, load_profile(profile))]


def test_alvis_rules_report_every_problem_at_once() -> None:
    found = messages("alvis", gpus_per_node="2", time_s="8-00:00:00")
    assert any("typed GPU request" in m for m in found)
    assert any("exceeds the 7-00:00:00 limit" in m for m in found)
    # Slurm charges the user's default project when -A is missing: a warning, not a refusal
    assert any(m.startswith("warning") and "add -A NAISS" in m for m in found)
    assert sum(m.startswith("error") for m in found) == 2


def test_alvis_cpu_only_needs_nogpu_and_unknown_type_is_named() -> None:
    assert any("-C NOGPU" in m for m in messages("alvis", account="NAISS2024-5-1"))
    assert messages("alvis", account="NAISS2024-5-1", constraint="NOGPU") == []
    found = messages("alvis", account="NAISS2024-5-1", gpus_per_node="H100:1")
    assert any("'H100' does not exist" in m and "A40" in m for m in found)


def test_old_account_style_warns_and_placeholder_fails() -> None:
    warned = messages("alvis", account="C3SE512-22-1", gpus_per_node="A40:1")
    assert warned and all(m.startswith("warning") for m in warned)
    placeholder = messages("narval", account="def-someuser", gpus_per_node="a100:1")
    assert any("placeholder" in m for m in placeholder)
    assert any("placeholder" in m for m in messages("narval", account="<ACCOUNT>"))


def test_partition_limits() -> None:
    assert any("does not exist on lab" in m and "debug, long" in m
               for m in messages("lab", partition="gpu"))
    assert any("00:20:00 limit of partition 'debug'" in m
               for m in messages("lab", partition="debug", time_s="30"))
    assert messages("lab", partition="long", time_s="30") == []
    assert any("2-node limit" in m for m in messages("daint", partition="debug", nodes="3",
                                                     account="g123"))
    assert any("--qos=dgx" in m for m in messages("m3", partition="dgx", account="ml20"))
    # SDumont gives the partition's default time: a warning with the reason
    assert any(m.startswith("warning") and "default time" in m
               for m in messages("sdumont", partition="nvidia"))


def test_gpu_request_parsing() -> None:
    assert GpuRequest.parse("A40:1") == GpuRequest(1, "A40")
    assert GpuRequest.parse("gpu:v100:2") == GpuRequest(2, "v100")
    assert GpuRequest.parse("4") == GpuRequest(4)
    with pytest.raises(InvalidRequest, match=r"'1ß'.*TYPE:COUNT"):
        GpuRequest.parse("1ß")
    gres = updated(ResourceRequest(), {"gres": "gpu:v100:2"})
    assert gres.gpus() == GpuRequest(2, "v100")


def test_request_round_trips_through_dict() -> None:
    request = updated(ResourceRequest(profile="lab"), CASES["lab_gpu"][1])
    assert from_dict(to_dict(request)) == request


def test_directives_read_like_sbatch() -> None:
    cell = "\n".join([
        "# a comment first",
        "#SBATCH -A NAISS2024-5-1 -p alvis",
        "#SBATCH --nodes 1",
        "#SBATCH -t 360  # six hours",
        "#SBATCH --constraint='gpu'",
        "#SBATCH --account=\"em09\"",
        "##SBATCH --time=99:00:00",
        "#SBATCH --mail-type=END",
        "#SBATCH -J my-run",
        "x = 1",
        "#SBATCH --time=1",
    ])
    parsed = directives.parse(cell)
    assert parsed.values == {"account": "em09", "partition": "alvis", "nodes": "1",
                             "time_s": "360", "constraint": "gpu"}
    assert parsed.extra == (("mail-type", "END"),)
    assert parsed.job_name == "my-run"
    assert parsed.body.startswith("x = 1")


def test_directive_with_en_dash_is_explained() -> None:
    with pytest.raises(InvalidRequest, match=r"two hyphens"):
        directives.parse("#SBATCH \u2013time=01:00:00\nx = 1")


def test_profile_follows_the_cluster_a_hub_server_runs_on() -> None:
    from hpc_magics.core.sites import default_profile_name

    assert default_profile_name({"SLURM_CLUSTER_NAME": "alvis"}) == "alvis"
    assert default_profile_name({"SLURM_CLUSTER_NAME": "Narval"}) == "narval"
    assert default_profile_name({"SLURM_CLUSTER_NAME": "elsewhere"}) == "generic"
    assert default_profile_name({"SLURM_CLUSTER_NAME": "alvis",
                                 "HPC_MAGICS_PROFILE": "m3"}) == "m3"
    assert default_profile_name({}) == "generic"


def test_every_short_option_sbatch_gives_a_value_takes_the_next_word() -> None:
    """Which short options take a value is read off sbatch's own option table (a second,
    hand-kept list missed -b, -i, -L, -m, -S, -B and -F: ``-b now+1hour`` was refused)."""
    parsed = directives.parse("#SBATCH -b now+1hour -L matlab:1 -m block -k\nx = 1")
    assert parsed.extra == (("b", "now+1hour"), ("L", "matlab:1"), ("m", "block"), ("k", ""))


def test_a_memory_too_small_for_python_is_warned_not_refused() -> None:
    """``--mem 4`` is 4 MB to sbatch (its unit without a suffix): sbatch takes it, the job
    then dies of OOM; said where the request's problems are, with the fix."""
    found = messages("lab", partition="long", mem_mb="4")
    assert found == ["warning: --mem 4M is 4 MB (sbatch's unit for a plain number), too "
                     "little for Python: write 4G for gigabytes"]
    assert messages("lab", partition="long", mem_mb="100M") == []
    assert messages("lab", partition="long", mem_mb="0") == []  # the whole node's memory


def test_an_empty_setup_line_adds_nothing() -> None:
    """``--setup ""`` used to add an empty line, named later as ``dropped --setup  (``."""
    request = updated(ResourceRequest(), {"setup": ['""', "", "  ", "'module load X'"]})
    assert request.setup == ("module load X",)


def test_zero_gpus_is_no_gpu_request() -> None:
    """``--gpus-per-node 0`` (or ``a100:0``): Slurm reads a zero count as no GPUs; it
    rendered ``--gres=gpu:0`` and had a type checked against the partition. Now it clears
    the session's GPUs (a CPU cell after GPU ones) and renders nothing."""
    gpu = ResourceRequest(profile="lab", partition="debug", gpus_per_node=GpuRequest(1, "v100"))
    for zero in ("0", "a100:0"):
        request = updated(gpu, {"gpus_per_node": zero})
        assert request.gpus_per_node is None
        assert not any("gpu" in line for line in jobscript.header_lines(
            request, load_profile("lab")))
        assert messages("lab", partition="debug", gpus_per_node=zero) == []
