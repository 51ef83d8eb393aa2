"""The one job-script renderer: golden ``job.sh`` per packaged profile, and its rules."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import pytest

from hpc_magics.backends.submitit_backend import SlurmBackend
from hpc_magics.core import directives, jobscript, validation
from hpc_magics.core.errors import InvalidRequest, SubmissionError
from hpc_magics.core.flags import FLAG_FIELDS, SBATCH_FLAGS
from hpc_magics.core.profiles import PACKAGED_DIR, ClusterProfile, load_profile
from hpc_magics.core.resources import ResourceRequest, updated
from hpc_magics.magics.arguments import resource_flags, values_from_args
from hpc_magics.scheduler.submit import parse_answer

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "job_sh"
FOLDER = "/scratch/ada/hpc_jobs/train-20250101-120000-abcd"  # fixed, so the text is too
PYTHON = "/opt/venv/bin/python"

# One request per packaged profile: a new profile needs its golden job.sh.
REQUESTS: dict[str, dict[str, Any]] = {
    "alvis": {"gpus_per_node": "A40:1", "time_s": "2h", "account": "NAISS2024-5-1"},
    "daint": {"partition": "debug", "time_s": "30", "nodes": "2", "account": "g123",
              "constraint": "gpu"},
    "daint_xc": {"partition": "normal", "time_s": "1h", "nodes": "1", "account": "s1160",
                 "constraint": "gpu"},
    "generic": {"time_s": "1h", "cpus_per_task": "4", "mem_mb": "8G",
                "setup": ["module load python/3.11"]},
    "lab": {"partition": "debug", "gpus_per_node": "v100:1", "time_s": "10",
            "setup": ["module load python"]},
    "m3": {"partition": "dgx", "qos": "dgx", "gpus_per_node": "V100:2", "time_s": "1-00:00:00",
           "mem_mb": "64G", "account": "ml20"},
    "narval": {"gpus_per_node": "a100:4", "time_s": "12:0:0", "account": "def-smith",
               "cpus_per_task": "32", "mem_mb": "0"},
    "sdumont": {"partition": "sequana_gpu_shared", "gpus_per_node": "2", "time_s": "04:00:00"},
    "sdumont2nd": {"partition": "lncc-h100_shared", "gpus_per_node": "1", "time_s": "24:00:00"},
    # the Alliance's site profile and today's clusters; the retired ones (a warning only)
    "alliance": {"time_s": "3:00:00", "account": "def-smith", "cpus_per_task": "8",
                 "mem_mb": "16G"},
    "fir": {"gpus_per_node": "h100:1", "time_s": "1-00:00:00", "account": "rrg-jones-ab",
            "cpus_per_task": "12"},
    "nibi": {"gpus_per_node": "h100:8", "time_s": "12:0:0", "account": "def-smith"},
    "rorqual": {"time_s": "2-00:00:00", "account": "def-smith", "cpus_per_task": "192"},
    "trillium": {"nodes": "2", "time_s": "24:00:00", "account": "def-smith"},
    "cedar": {"time_s": "1h", "account": "def-smith"},
    "graham": {"time_s": "1h", "account": "def-smith"},
    "beluga": {"time_s": "1h", "account": "def-smith"},
    "niagara": {"time_s": "1h", "account": "def-smith"},
    # CSCS's site profile and the Alps clusters
    "cscs": {"time_s": "1h", "account": "g123", "nodes": "1"},
    "clariden": {"partition": "debug", "time_s": "1:30:00", "account": "a-infra01-1"},
    "santis": {"time_s": "24:00:00", "nodes": "4", "account": "csstaff"},
    "eiger": {"partition": "debug", "time_s": "30", "account": "s1160"},
    "bristen": {"gpus_per_node": "4", "time_s": "2h", "account": "g123"},
}


def submitted_script(profile_name: str) -> str:
    """Rendered by the very method ``SlurmBackend.submit`` writes and submits."""
    profile = load_profile(profile_name, [PACKAGED_DIR])
    request = updated(ResourceRequest(profile=profile_name), REQUESTS[profile_name])
    assert [p for p in validation.check(request, profile) if p.severity == validation.ERROR] == []
    return SlurmBackend(python=PYTHON).job_script(FOLDER, request, profile, "train")


def test_every_packaged_profile_has_a_golden_job_script() -> None:
    assert {p.stem for p in PACKAGED_DIR.glob("*.toml")} == set(REQUESTS)


@pytest.mark.parametrize("profile_name", sorted(REQUESTS))
def test_submitted_job_script_matches_golden_file(profile_name: str) -> None:
    rendered = submitted_script(profile_name)
    golden = GOLDEN / f"{profile_name}.sh"
    if os.environ.get("HPC_MAGICS_UPDATE_GOLDEN"):  # regenerate on purpose, then review
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(rendered)
    assert rendered == golden.read_text()


@pytest.mark.parametrize("profile_name", sorted(REQUESTS))
def test_what_submitit_would_have_added_is_not_there(profile_name: str) -> None:
    script = submitted_script(profile_name)
    shebang = load_profile(profile_name, [PACKAGED_DIR]).shebang
    assert script.startswith(shebang + "\n")
    assert "wckey" not in script and "--ntasks-per-node" not in script
    assert sum(line.startswith("#SBATCH --gres") for line in script.splitlines()) <= 1
    # what the engine needs on the node
    engine = f"{PYTHON} -u -m hpc_magics.node.engine {FOLDER}"
    # always an srun step: the time limit's signals reach a step, not the shell's children
    assert f"\nsrun --unbuffered --output {FOLDER}/%j_%t_log.out " \
           f"--error {FOLDER}/%j_%t_log.err {engine}\n" in script
    assert "export SUBMITIT_EXECUTOR=slurm\n" in script and "\numask 077\n" in script


def test_one_gres_line_when_gpus_and_other_gres_are_asked() -> None:
    request = updated(ResourceRequest(profile="lab"),
                      {"gpus_per_node": "v100:2", "gres": "gpu:1,tmp:10G"})
    lines = jobscript.header_lines(request, load_profile("lab"))
    assert [line for line in lines if "gres" in line] == ["#SBATCH --gres=tmp:10G,gpu:v100:2"]


def test_pass_through_flags_keep_their_spelling_and_quotes() -> None:
    parsed = directives.parse("#SBATCH -w c1 --mail-type=END --comment 'two words'\nx = 1")
    request = ResourceRequest(extra=parsed.extra)
    assert jobscript.header_lines(request) == [
        "#SBATCH -w c1", "#SBATCH --mail-type=END", "#SBATCH --comment='two words'"]


def test_a_cell_cannot_move_the_engines_log_files() -> None:
    request = ResourceRequest(extra=(("output", "mine.log"),))
    with pytest.raises(InvalidRequest, match=r"#SBATCH --output: hpc_magics sets the job's log"):
        SlurmBackend(python=PYTHON).job_script(FOLDER, request, load_profile("lab"), "train")
    # without the engine (hpc-magics convert's .sbatch) the user's --output is theirs
    assert "#SBATCH --output=mine.log" in jobscript.header_lines(request)


def test_profile_and_request_setup_each_run_once_in_order() -> None:
    profile = ClusterProfile(name="site", setup=("module load a",))
    request = ResourceRequest(setup=("module load a", "module load b"))
    script = jobscript.render(request, profile, jobscript.JobParts(run=("true",)))
    assert ("# Setup from profile site\nmodule load a\n\n# Setup from the request (--setup, "
            "%hpc_resources or the notebook's metadata)\nmodule load b\n\ntrue\n") in script


def test_the_flag_table_feeds_the_parser_and_the_magic_arguments() -> None:
    spellings = {s for flags, _ in resource_flags() for s in flags}
    for flag in SBATCH_FLAGS:
        assert set(flag.spellings) <= spellings
        for spelling in (flag.name, flag.short):
            if spelling:
                assert FLAG_FIELDS[spelling] == flag.field
                parsed = directives.parse(f"#SBATCH -{'-' if len(spelling) > 1 else ''}"
                                          f"{spelling} 1\nx = 1")
                assert parsed.values == {flag.field: "1"}
    parser = argparse.ArgumentParser()
    for flags, options in resource_flags():
        parser.add_argument(*flags, **options)
    values = values_from_args(parser.parse_args(["-t", "5", "--mem", "2G", "-c", "3"]))
    assert (values["time_s"], values["mem_mb"], values["cpus_per_task"]) == ("5", "2G", "3")


@pytest.mark.parametrize(("answer", "job_id"), [
    ("4242\n", "4242"), ("4242;lab\n", "4242"), ("4242_[1-5]\n", "4242_[1-5]"),
    ("4242_3\n", "4242_3"), ("4242+0\n", "4242+0"),
    ("sbatch: warning: something\n4242\n", "4242")])
def test_job_ids_from_sbatch_parsable(answer: str, job_id: str) -> None:
    assert parse_answer(answer).job_id == job_id


def test_an_answer_that_is_not_a_job_id_says_check_squeue() -> None:
    with pytest.raises(SubmissionError, match="not a job id: the job may have been submitted"):
        parse_answer("Submitted batch job\n")


@pytest.mark.parametrize("signal", ["USR2@90", "USR2@0"])
def test_the_engine_runs_in_an_srun_step(signal: str) -> None:
    """Slurm's signals (the limit's, --signal's) reach job steps, not the batch shell's
    children: a plain cell too keeps its step, or its output at the limit is lost."""
    parts = jobscript.cell_parts(FOLDER, PYTHON, "train", signal=signal)
    assert parts.run[-1] == (f"srun --unbuffered --output {FOLDER}/%j_%t_log.out --error "
                             f"{FOLDER}/%j_%t_log.err {PYTHON} -u -m hpc_magics.node.engine "
                             f"{FOLDER}")


@pytest.mark.parametrize(("job_id", "task"), [("4242", 0), ("4242_7", 0), ("4242", 3)])
def test_the_logs_read_are_the_files_submitit_names(job_id: str, task: int,
                                                    tmp_path: Path) -> None:
    """The job script's patterns (%j or %A_%a, %t), the widget's and ``log()``'s paths and
    submitit's own (its local executor writes the files): one name for each file."""
    from submitit.core.utils import JobPaths

    from hpc_magics.jobfolder.folder import JobFolder

    expected = JobPaths(tmp_path, job_id=job_id, task_id=task)
    assert SlurmBackend().log_paths(job_id, JobFolder(tmp_path), task) == [
        str(expected.stdout), str(expected.stderr)]
    sbatch_name = jobscript.log_name("%A_%a" if "_" in job_id else "%j", "%t", "out")
    base, _, index = job_id.partition("_")
    assert sbatch_name.replace("%A", base).replace("%a", index).replace(
        "%j", job_id).replace("%t", str(task)) == expected.stdout.name
