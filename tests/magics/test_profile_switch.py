"""Moving a session's request to another cluster's profile: what named the first cluster (its
account, partition, GPU type, module loads) is dropped and said, so the new cluster is not
asked for another site's things; a cell's own #SBATCH lines still count."""

from __future__ import annotations

from typing import Any

import pytest

from hpc_magics.core.resources import GpuRequest, ResourceRequest, for_profile


def test_for_profile_keeps_portable_figures_and_names_what_it_drops() -> None:
    alvis = ResourceRequest(profile="alvis", time_s=7200, cpus_per_task=4, mem_mb=4096,
                            gpus_per_node=GpuRequest(1, "A40"), account="NAISS2024-5-1",
                            partition="alvis", setup=("module load PyTorch",))
    lab, dropped = for_profile(alvis, "lab")
    assert (lab.profile, lab.time_s, lab.cpus_per_task, lab.mem_mb) == ("lab", 7200, 4, 4096)
    assert lab.gpus_per_node == GpuRequest(1) and lab.account is None and lab.partition is None
    assert lab.setup == ()
    assert dropped == ["-p alvis", "-A NAISS2024-5-1", "the GPU type A40",
                       "--setup module load PyTorch"]
    assert for_profile(lab, "lab") == (lab, [])


def test_hpc_resources_switch_then_cell_lines(shell: Any,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_line_magic("hpc_resources",
                         "--profile alvis --gpus-per-node A40:1 -t 2h -A NAISS2024-5-1")
    capsys.readouterr()
    shell.run_line_magic("hpc_resources", "--profile lab -p debug")
    said = capsys.readouterr().out
    assert "profile lab: dropped -A NAISS2024-5-1, the GPU type A40" in said
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    request = magics.request
    assert (request.profile, request.partition, request.account) == ("lab", "debug", None)
    assert request.time_s == 7200 and request.gpus_per_node == GpuRequest(1)
    # back to alvis for one cell: that cell's own #SBATCH account is kept
    shell.run_cell_magic("sbatch", "--profile alvis --dry-run",
                         "#SBATCH -A NAISS2024-5-1\n#SBATCH --gpus-per-node A40:1\npass")
    script = capsys.readouterr().out
    assert "#SBATCH --account=NAISS2024-5-1" in script and "dropped -p debug" in script


def test_a_switch_names_only_what_the_line_does_not_give_again(
        shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """``--profile lab -p nosuchpart`` used to say it dropped ``-p nosuchpart``, the value
    just given (the old values were dropped by name before the new ones were applied)."""
    shell.run_line_magic("hpc_resources", "--profile alvis -p alvis -A NAISS2024-5-1 "
                                          "--gpus-per-node A40:1 --setup 'module load X'")
    capsys.readouterr()
    shell.run_line_magic("hpc_resources", "--profile lab -p nosuchpart --gpus-per-node V100:1")
    said = capsys.readouterr().out
    assert "profile lab: dropped -A NAISS2024-5-1, --setup module load X (" in said
    assert "nosuchpart (" not in said and "-p alvis" not in said and "A40" not in said
    request = shell.magics_manager.registry["HpcMagicsKernel"].request
    assert (request.partition, request.account, str(request.gpus_per_node)) == (
        "nosuchpart", None, "V100:1")
    # everything given again: nothing to say
    shell.run_line_magic("hpc_resources", "--profile generic -p other --gpus-per-node 1")
    assert "dropped" not in capsys.readouterr().out
    # a cell's own #SBATCH line gives it again too
    shell.run_cell_magic("sbatch", "--profile lab --dry-run", "#SBATCH -p debug\npass")
    assert "dropped" not in capsys.readouterr().out
