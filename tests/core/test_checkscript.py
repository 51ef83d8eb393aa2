"""The job-script checker reads #SBATCH blocks as sbatch does (core/checkscript.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpc_magics.cli import main
from hpc_magics.core.checkscript import (
    COMMENT,
    ERROR,
    IGNORED,
    OK,
    PASSED,
    WARNING,
    ScriptReport,
    check_script,
    render,
)
from hpc_magics.core.profiles import load_profile
from hpc_magics.core.resources import GpuRequest
from hpc_magics.core.sites import profile_for_script as guess_profile


def check(text: str, profile: str = "lab") -> ScriptReport:
    return check_script(text, load_profile(profile))


def verdicts(report: ScriptReport) -> dict[int, str]:
    return {line.number: line.verdict for line in report.lines}


def errors_named(report: ScriptReport) -> set[str]:
    return {f.field for f in report.errors}


def test_sbatch_spellings_all_read_the_same() -> None:
    report = check("\n".join([
        "#!/bin/bash",
        "#SBATCH -p long -N 1 --ntasks-per-node 2",        # several options, short and long
        "#SBATCH --time 1-12:30",                           # D-HH:MM, value after a space
        "#SBATCH -c2 --mem='4G'",                           # glued short value, quoted value
        "#SBATCH --gres=gpu:v100:1 --job-name \"my run\"",
        "#SBATCH --ntasks-per-n=2",                         # unambiguous prefix, as getopt
        "#SBATCH --partition=debug   # inline comment",
        "#SBATCH --partition=long",                         # duplicate: the last wins
        "python train.py",
    ]))
    request = report.request
    assert (request.partition, request.nodes, request.ntasks_per_node) == ("long", 1, 2)
    assert request.time_s == ((24 + 12) * 60 + 30) * 60
    assert (request.cpus_per_task, request.mem_mb) == (2, 4096)
    assert request.gpus() == GpuRequest(1, "v100")
    assert report.ok and set(verdicts(report).values()) == {OK}


def test_minutes_only_time_is_minutes() -> None:
    report = check("#SBATCH -p debug -t 15\n")
    assert report.request.time_s == 15 * 60 and report.ok
    assert "time" in errors_named(check("#SBATCH -p debug -t 25\n"))


def test_unmodelled_options_pass_through_and_are_reported() -> None:
    report = check("\n".join([
        "#SBATCH --mail-type=END,FAIL --mail-user=a@b.c",
        "#SBATCH --mem-per-cpu=1G --exclusive",
        "#SBATCH --array=0-15%4 --output=logs/%x-%A_%a.out",
        "#SBATCH --dependency=afterok:12:13,singleton",
        "#SBATCH --gpus=v100:2",
        "srun hostname",
    ]))
    assert report.ok, render(report)
    assert dict(report.request.extra)["mem-per-cpu"] == "1G"
    assert {"mail-type", "exclusive", "array", "output", "gpus"} <= set(
        dict(report.request.extra))
    assert set(verdicts(report).values()) <= {PASSED, "ok"}  # --dependency is modelled
    assert "passed to sbatch as written" in render(report)


@pytest.mark.parametrize(("line", "option"), [
    ("#SBATCH --mem-per-cpu=3G -c 3", "mem-per-cpu"),     # 9 GB on an 8000 MB node
    ("#SBATCH -N 1 --ntasks=3 -c 2", "cpus-per-task"),    # 6 CPUs held on a 4-CPU node
    ("#SBATCH --gpus-per-node=1ß", "gpus-per-node"),
    ("#SBATCH --gres=gpu:v100:3", "gres"),
    ("#SBATCH --gpus=v100:5 -N 2", "gpus"),
    ("#SBATCH --array=1-", "array"),
    ("#SBATCH --dependency=afterok:$PREV", "dependency"),
    ("#SBATCH --mail-type=FINISH", "mail-type"),
    ("#SBATCH --time=2 hours", "time"),  # a value with a space, unquoted
    ("#SBATCH --time='2 hours'", "time"),
    ("#SBATCH --output=<dir>/out.log", "output"),
    ("#SBATCH --nodes=0", "nodes"),
    ("#SBATCH --tim=10", "tim"),                        # ambiguous: --time, --time-min
    ("#SBATCH --ntaks-per-node=2", "ntasks-per-node"),  # misspelt: sbatch refuses it
    ("#SBATCH --mem-4G", "mem"),                        # value glued with a dash
])
def test_malformed_or_impossible_values_name_the_option(line: str, option: str) -> None:
    report = check(f"#!/bin/bash\n#SBATCH -p debug -t 10\n{line}\necho\n")
    assert option in errors_named(report), render(report)
    assert verdicts(report)[3] == ERROR


def test_every_problem_at_once_with_a_verdict_per_line() -> None:
    report = check("\n".join([
        "#!/bin/bash",
        "#SBATCH -p debug -t 30",          # over debug's 20 minutes
        "#SBATCH --gres=gpu:a100:1",       # no such type here
        "#SBATCH --mem=9000",              # over the node
        "#SBATCH --mail-type=END",
    ]))
    assert errors_named(report) == {"time", "gres", "mem"}
    assert verdicts(report) == {2: ERROR, 3: ERROR, 4: ERROR, 5: PASSED}


def test_directives_after_the_first_command_are_ignored_and_said() -> None:
    report = check("#!/bin/bash\n#SBATCH -p debug -t 5\n\n# setup\nmodule load x\n"
                   "#SBATCH --time=99:00:00\n")
    assert report.ok and report.request.time_s == 300
    assert verdicts(report)[6] == IGNORED
    assert any("sbatch ignores this line" in f.message for f in report.findings)


def test_lookalike_lines_are_comments_and_unknown_options_only_warn() -> None:
    report = check("##SBATCH --time=99:00:00\n# SBATCH -p nope\n#SBATCH --frobnicate=3\n")
    assert report.ok
    assert verdicts(report)[1] == COMMENT and verdicts(report)[2] == COMMENT
    assert verdicts(report)[3] == WARNING
    site = check("#SBATCH --uenv=prgenv-gnu/24.11:v1 --view=default -A g123\n", "daint")
    assert site.ok and not [f for f in site.findings if "uenv" in f.field]


def test_sbatch_syntax_errors_are_errors() -> None:
    assert not check("#SBATCH \u2013time=01:00:00\n").ok          # en dash
    assert not check("#SBATCH --exclusive=yes --hold=1\n").ok     # --hold takes no value
    assert not check("#SBATCH -p 'debug\n").ok                     # unbalanced quote
    assert not check("#SBATCH time=10\n").ok                       # not an option


def test_placeholders_fail_naming_the_option() -> None:
    assert "account" in errors_named(check("#SBATCH -A <ACCOUNT> -t 1:00:00\n", "narval"))
    assert "account" in errors_named(check("#SBATCH --account=def-someuser\n", "narval"))
    assert "account" in errors_named(check("#SBATCH --account NAISSXXXX-YY-ZZZZ\n", "alvis"))
    # an address in <> never stops a job
    assert check("#SBATCH -p debug -t 5 --mail-user=<ada@example.org>\n").ok


def test_an_account_unlike_the_sites_runs_with_a_warning_showing_its_style() -> None:
    found = check("#SBATCH -A C3SE512-22-1 -t 1:00:00 -C NOGPU\n", "alvis")  # an older style
    assert found.ok
    said = [f.message for f in found.findings if f.field == "account"]
    assert said == ["account 'C3SE512-22-1' does not look like a project of alvis (like "
                    "NAISS2024-5-1)"], said


def test_legacy_daint_scripts_are_recognised_with_advice_for_alps() -> None:
    script = ("#!/bin/bash -l\n#SBATCH --account=s1160 --constraint=gpu\n"
              "#SBATCH --time=01:00:00 --nodes=2 --ntasks-per-core=1 --hint=nomultithread\n"
              "module load daint-gpu\nsrun python x.py\n")
    assert guess_profile(script) == "daint_xc"
    legacy = check(script, "daint_xc")
    assert legacy.ok
    assert any("Alps" in f.message and f.severity == WARNING for f in legacy.findings)
    on_alps = check(script, "daint")
    assert on_alps.ok
    assert any("drop -C gpu" in f.message for f in on_alps.findings)


def test_cli_exit_status_for_ci(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.sh"
    good.write_text("#!/bin/bash\n#SBATCH -p debug -t 10\nhostname\n")
    bad = tmp_path / "bad.sh"
    bad.write_text("#!/bin/bash\n#SBATCH -p debug -t 10:00:00\nhostname\n")
    assert main(["check", "--no-live", "--profile", "lab", str(good)]) == 0
    assert main(["check", "--no-live", "--profile", "lab", str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert "FAIL: 1 error(s)" in out and "exceeds the 00:20:00 limit" in out
    assert main(["check", "--no-live", "--profile", "lab", str(tmp_path / "none.sh")]) == 2
    bare = tmp_path / "bare.sh"
    bare.write_text("#SBATCH -p debug -t 10\nhostname\n")  # sbatch wants #! on line 1
    assert main(["check", "--no-live", "--profile", "lab", str(bare)]) == 1
    assert "add #!/bin/bash as line 1" in capsys.readouterr().out
    assert main(["check", "--no-live", "--profile", "nope", str(good)]) == 2


def test_every_error_counted_is_printed(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """An empty file has no line 1 to hang its missing '#!' on: the error is still shown."""
    empty = tmp_path / "empty.sh"
    empty.write_text("")
    assert main(["check", "--no-live", "--profile", "lab", str(empty)]) == 1
    out = capsys.readouterr().out
    assert "FAIL: 1 error(s)" in out and "empty" in out and "#!/bin/bash" in out
    # and whatever a finding's line, the rendered text names every error counted
    report = check_script("", load_profile("lab"), whole_file=True)
    assert all(f.message in render(report) for f in report.findings)


@pytest.mark.parametrize(("script", "cluster"), [
    ("#SBATCH -A NAISS2024-22-219 -p alvis\n", "alvis"),
    # an Alliance script that names no cluster: the site's rules, not one cluster's limits
    ("#SBATCH --account=def-smith\nmodule load StdEnv/2023\n", "alliance"),
    ("#SBATCH --account=def-smith --gres=gpu:a100:1\n", "narval"),
    ("#SBATCH -p sequana_gpu_shared\n", "sdumont"),
    ("#SBATCH --partition=m3g --gres=gpu:V100:1\n", "m3"),
    # uenv exists on every Alps cluster: CSCS's rules; a cluster's own name picks it
    ("#SBATCH --uenv=prgenv-gnu/24.11:v1\n", "cscs"),
    ("#SBATCH --uenv=prgenv-gnu/24.11:v1@daint\n", "daint"),
    ("#SBATCH -p debug -t 10\n", None),
])
def test_the_cluster_a_script_was_written_for_is_guessed(script: str,
                                                         cluster: str | None) -> None:
    assert guess_profile(script) == cluster
