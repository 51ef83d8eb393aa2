"""What real job scripts of the corpus (tests/corpus/jobscripts.toml) showed the checker got
wrong: options a well-known Slurm plugin adds are not typos of an sbatch option (a Clariden
script's ``#SBATCH --container-writable`` was refused as ``--container=writable``), and an
Alps GH200 node takes the ``--mem=450G`` CSCS documents (a CSCS staff script was refused)."""

from __future__ import annotations

import pytest

from hpc_magics.core.checkscript import ERROR, WARNING, check_script, render
from hpc_magics.core.profiles import load_profile


def _line_verdict(option_line: str, profile: str) -> tuple[str, list[str]]:
    report = check_script(f"#!/bin/bash\n#SBATCH -A g123 -t 30\n{option_line}\nhostname\n",
                          load_profile(profile), whole_file=True)
    line = next(line for line in report.lines if line.number == 3)
    return line.verdict, [f.message for f in report.findings if f.line == 3] + [render(report)]


@pytest.mark.parametrize("option_line", [
    "#SBATCH --container-writable",
    "#SBATCH --container-image=nvcr.io#nvidia/pytorch:24.01-py3",
    "#SBATCH --container-mounts=/scratch:/scratch,/users:/users",
    "#SBATCH --no-container-mount-home",
])
@pytest.mark.parametrize("profile", ["daint", "generic"])
def test_pyxis_options_warn_naming_the_plugin(option_line: str, profile: str) -> None:
    verdict, messages = _line_verdict(option_line, profile)
    assert verdict == WARNING, messages
    assert "pyxis" in messages[0] and "plugin" in messages[0], messages


@pytest.mark.parametrize(("option_line", "fix"), [
    ("#SBATCH --mem-4G", "--mem=4G"),                    # a value glued with a dash
    ("#SBATCH --container-/path/to/bundle", "--container=/path/to/bundle"),
])
def test_glued_values_are_still_refused(option_line: str, fix: str) -> None:
    verdict, messages = _line_verdict(option_line, "generic")
    assert verdict == ERROR, messages
    assert fix in messages[0], messages


@pytest.mark.parametrize(("mem", "ok"), [("450G", True), ("460800M", True), ("451G", False)])
def test_alps_node_takes_the_documented_450G(mem: str, ok: bool) -> None:
    """CSCS's docs (running/slurm.md): ``--exclusive --mem=450G`` is "most of allowable
    memory" on a GH200 node; more than that is refused."""
    script = f"#!/bin/bash\n#SBATCH -A g123 -N 1 -t 30\n#SBATCH --exclusive --mem={mem}\nhostname\n"
    report = check_script(script, load_profile("daint"), whole_file=True)
    assert report.ok is ok, render(report)
    if not ok:
        assert {f.field for f in report.errors} == {"mem"}, render(report)
