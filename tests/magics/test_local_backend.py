"""%%sbatch on submitit's local executor: the embedded default where there is no Slurm."""

from __future__ import annotations

import base64
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from hpc_magics.attach import attach
from hpc_magics.core.errors import JobFailed
from hpc_magics.widgets.job import JobWidget


def test_cell_runs_locally_and_results_come_back_with_wait(
        shell: Any, cells: Any, job_folders: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell(cells.SETUP)
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", cells.WORK)
    out = capsys.readouterr().out
    assert "shipping" in out and "data (ndarray" in out and "scale (function" in out
    assert "math (module math)" in out and "np (module" not in out
    assert "sum on the node: 135.0" in out
    assert shell.user_ns["scaled"].tolist() == [3.0 * i for i in range(10)]
    assert shell.user_ns["summary"].total == 135.0
    assert shell.user_ns["root"] == pytest.approx(135.0 ** 0.5)
    [folder] = job_folders(shell)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(folder.parent.stat().st_mode) == 0o700
    assert {"job.py", "job.sh", "meta.json", "results.pkl", "output.txt"} <= {
        p.name for p in folder.iterdir()}
    assert "scaled = scale(data, 3)" in (folder / "job.py").read_text()
    assert "local executor" in (folder / "job.sh").read_text()


def test_later_fetch_and_reattach_after_restart(
        shell: Any, cells: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell(cells.SETUP)
    shell.run_cell_magic("sbatch", "--backend local -t 5", cells.WORK)
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    assert handle.ran_locally
    assert "ran locally" in handle.summary()
    handle.wait(timeout=60)
    assert "scaled" not in shell.user_ns
    # a "restarted kernel": no handles in memory, only the job folder on disk
    magics.handles.clear()
    job_id = magics.last_job
    magics.last_job = None
    shell.run_line_magic("hpc_fetch", job_id)
    assert shell.user_ns["summary"].total == 135.0
    assert "sum on the node: 135.0" in capsys.readouterr().out
    again = attach(job_id, Path(magics.jobs_root))
    assert again.fetch(show=False)["root"] == pytest.approx(135.0 ** 0.5)
    import hpc_magics

    assert hpc_magics.job(job_id).job_id == job_id  # finds the shell like a user's call
    assert hpc_magics.job().state in {"FINISHED", "COMPLETED"}


def test_exception_in_the_job_is_raised_with_the_remote_traceback(
        shell: Any, cells: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell(cells.SETUP)
    with pytest.raises(JobFailed) as raised:
        shell.run_cell_magic("sbatch", "--backend local --wait -t 5", cells.FAILING)
    remote = raised.value.remote_traceback
    assert "ZeroDivisionError" in remote and "return int(x) // 0" in remote
    assert "in inner" in remote and "runner.py" not in remote
    assert "result" not in shell.user_ns
    # the folder proves the failure, also while the local controller exits normally: the
    # handle, %hpc_jobs and the widget (its Rerun) say FAILED, never FINISHED
    import hpc_magics

    job = hpc_magics.job()
    assert job.state == "FAILED"
    capsys.readouterr()
    shell.run_line_magic("hpc_jobs", "")
    lines = capsys.readouterr().out.splitlines()
    [at] = [n for n, line in enumerate(lines) if line.split()[:1] == [job.job_id]]
    assert lines[at].split()[1] == "FAILED", lines[at]
    # why, as a local cell's traceback ends (from the outcome file, before any fetch): in
    # the listing under its row, and in the cell's widget
    said = "the cell raised ZeroDivisionError: integer division or modulo by zero"
    assert lines[at + 1].strip() == said, lines
    widget = JobWidget(job)
    assert said in widget.status.value + widget.story.value


def test_a_failed_jobs_log_has_the_cells_lines_and_traceback_not_the_engines(
        shell: Any, cells: Any) -> None:
    shell.run_cell(cells.SETUP)
    shell.run_cell_magic("sbatch", "--backend local -t 5",
                         "print('submitit says hi, as my own line')\n" + cells.FAILING)
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    handle.wait(timeout=60)
    log = handle.log()
    assert "submitit says hi, as my own line" in log
    assert log.count("Traceback (most recent call last):") == 1, log
    assert "return int(x) // 0" in log and "ZeroDivisionError" in log
    assert "runpy" not in log and "submitit/core" not in log and "runner.py" not in log, log


def test_unpicklable_names_are_refused_before_submitting(shell: Any, tmp_path: Path,
                                                        job_folders: Any) -> None:
    handle = open(tmp_path / "data.txt", "w")
    shell.user_ns.update(log=handle, lock=__import__("threading").Lock(),
                         gen=(i for i in range(3)))
    try:
        for name, fix in (("log", "open it inside the cell"),
                          ("lock", "create it inside the cell"), ("gen", "list")):
            with pytest.raises(UsageError) as raised:
                shell.run_cell_magic("sbatch", "--backend local", f"x = {name}")
            message = str(raised.value)
            assert f"'{name}'" in message and fix in message and "\n" not in message
    finally:
        handle.close()
    assert job_folders(shell) == []


def test_huge_state_is_refused_naming_the_way_out(shell: Any, job_folders: Any) -> None:
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    magics.max_shipped_mb = 0.5
    shell.user_ns["big"] = bytes(2_000_000)
    with pytest.raises(UsageError, match=r"'big' is 2\.0 MB, over the 0\.5 MB limit.*np\.save"):
        shell.run_cell_magic("sbatch", "--backend local", "n = len(big)")
    magics.max_shipped_mb = 1024.0
    assert job_folders(shell) == []


@pytest.mark.parametrize(("line", "cell", "expected"), [
    ("--backend local --frobnicate", "x = 1", "unrecognized arguments: --frobnicate"),
    ("--backend local -t 2hours-ish", "x = 1", "time '2hours-ish' is not understood"),
    ("--backend local", "x = (1,\n", "syntax error at line"),
    ("--backend local --profile lab -p gpu", "x = 1", "partition 'gpu' does not exist on lab"),
    ("--backend local --mem lots", "x = 1", "memory 'lots' is not understood"),
    ("--backend local --profile lab -t 30", "x = 1", "exceeds the 00:20:00 limit"),
])
def test_bad_input_is_one_line_and_submits_nothing(shell: Any, line: str, cell: str,
                                                   expected: str, job_folders: Any) -> None:
    with pytest.raises(UsageError) as raised:
        shell.run_cell_magic("sbatch", line, cell)
    assert expected in str(raised.value)
    assert "\n" not in str(raised.value).strip()
    assert job_folders(shell) == []


def test_hpc_resources_sets_defaults_and_shows_the_request(shell: Any) -> None:
    view = shell.run_line_magic(
        "hpc_resources", "--profile alvis --gpus-per-node A40:1 -t 2h -A NAISS2024-5-1")
    text = repr(view)
    assert "#SBATCH --gpus-per-node=A40:1" in text and "#SBATCH --time=02:00:00" in text
    assert "≈ 2 GPU-h" in text
    assert "NAISS2024-5-1" in view._repr_html_()
    # later calls keep what was set and add to it
    view = shell.run_line_magic("hpc_resources", "--setup 'module load PyTorch'")
    assert view.request.setup == ("module load PyTorch",)
    assert view.request.account == "NAISS2024-5-1"
    view = shell.run_line_magic("hpc_resources", "--reset")
    assert view.request.account is None and view.request.profile == "generic"


def test_help_is_real(shell: Any) -> None:
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    for doc in (magics.sbatch.__doc__, magics.hpc_resources.__doc__):
        assert "--partition" in doc and "--gpus-per-node" in doc and "HH:MM:SS" in doc
    assert "--wait" in magics.sbatch.__doc__


def test_load_ext_is_cheap() -> None:
    code = ("import sys, IPython; from IPython.testing.globalipapp import get_ipython;"
            "ip = get_ipython(); ip.run_line_magic('load_ext', 'hpc_magics');"
            "heavy = [m for m in ('ipywidgets', 'nbconvert', 'tornado', 'submitit', 'cloudpickle')"
            " if m in sys.modules]; print(heavy)")
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=True, env={**os.environ})
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_figures_come_back_as_images(shell: Any, job_folders: Any,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[Any] = []
    monkeypatch.setattr("IPython.display.display", lambda *objects, **_: shown.extend(objects))
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "\n".join([
        "import matplotlib.pyplot as plt",
        "fig, ax = plt.subplots()",
        "ax.plot([1, 2, 3], [3, 1, 2])",
        "plt.show()",
        "peak = 3",
    ]))
    [folder] = job_folders(shell)
    # plt.show() sent it into the cell's output as the cell ran: shown once, from there
    images = [o for o in shown if isinstance(o, dict) and "image/png" in o]
    assert len(images) == 1 and base64.b64decode(images[0]["image/png"]).startswith(b"\x89PNG")
    assert not list((folder / "figures").glob("*.png"))
    assert shell.user_ns["peak"] == 3


def test_a_figure_left_open_comes_back_as_an_image(shell: Any, job_folders: Any,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[Any] = []
    monkeypatch.setattr("IPython.display.display", lambda *objects, **_: shown.extend(objects))
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5",
                         "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])")
    [folder] = job_folders(shell)
    pngs = sorted((folder / "figures").glob("*.png"))
    assert len(pngs) == 1 and pngs[0].read_bytes().startswith(b"\x89PNG")
    images = [o for o in shown if isinstance(o, dict) and "image/png" in o]
    assert len(images) == 1 and base64.b64decode(images[0]["image/png"]) == pngs[0].read_bytes()


def test_display_of_a_figure_on_the_node(shell: Any, job_folders: Any,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[Any] = []
    monkeypatch.setattr("IPython.display.display", lambda *objects, **_: shown.extend(objects))
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "\n".join([
        "import matplotlib.pyplot as plt",
        "fig = plt.figure()",
        "plt.plot([0, 1])",
        "display(fig)",
        "display('a note')",
    ]))
    [folder] = job_folders(shell)
    bundles = [o for o in shown if isinstance(o, dict)]  # as the node displayed them, once
    assert [sorted(b) for b in bundles] == [["image/png", "text/plain"], ["text/plain"]]
    assert bundles[1]["text/plain"] == "'a note'"
    assert not list((folder / "figures").glob("*.png"))  # not shown again at the end


def test_whole_notebook_job_from_the_command_and_fetch(shell: Any, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    """``hpc-magics submit`` (JupyterLab's terminal) and ``%hpc_fetch`` in the notebook."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from hpc_magics.cli import main

    notebook = tmp_path / "analysis.ipynb"
    nbformat.write(new_notebook(cells=[
        new_code_cell("values = [1, 2, 3]\nprint('total', sum(values))"),
        new_code_cell("import matplotlib.pyplot as plt\nplt.plot(values)\nplt.show()"),
    ]), notebook)
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    assert main(["submit", str(notebook), "--backend", "local", "-t", "10",
                 "--jobs-dir", str(magics.jobs_root), "--wait"]) == 0
    job_id = capsys.readouterr().out.split()[2]  # "submitted job ID (local): FOLDER"
    handle = magics.handle_for(job_id)
    shell.run_line_magic("hpc_fetch", job_id)
    out = capsys.readouterr().out
    assert "executed notebook:" in out
    executed = nbformat.read(handle.folder.path / "executed.ipynb", as_version=4)
    assert "total 6" in executed.cells[0].outputs[0]["text"]


def test_magics_in_a_cell_run_as_plain_python(shell: Any, job_folders: Any,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "\n".join([
        "!echo shell says hi",
        "files = !ls /",
        "%time total = sum(range(1000))",
        "n_files = len(files)",
    ]))
    out = capsys.readouterr().out
    assert "shell says hi" in out and "Wall time" in out
    assert shell.user_ns["total"] == 499500 and shell.user_ns["n_files"] > 3
    [folder] = job_folders(shell)
    assert "subprocess.run" in (folder / "job.py").read_text()


def test_dry_run_prints_the_script_and_shipping_and_submits_nothing(
        shell: Any, cells: Any, job_folders: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell(cells.SETUP)
    capsys.readouterr()
    shell.run_cell_magic("sbatch", "--backend local --dry-run -t 5 --name preview", cells.WORK)
    out = capsys.readouterr().out
    assert out.startswith("# dry run: nothing submitted. The job folder would be ")
    assert "/preview-YYYYMMDD-HHMMSS-XXXX" in out
    assert "#!/bin/bash\n# Runs on this machine through submitit's local executor" in out
    assert "stops the job after 5 min" in out
    assert out.rstrip().splitlines()[-1].startswith("# shipping") and "data (ndarray" in out
    assert "sum on the node" not in out and "scaled" not in shell.user_ns
    assert job_folders(shell) == []
    assert not Path(shell.magics_manager.registry["HpcMagicsKernel"].jobs_root).exists()


def test_hpc_resources_shows_the_profiles_shebang_and_one_gres_line(shell: Any) -> None:
    view = shell.run_line_magic("hpc_resources", "--profile daint -p debug -t 30 -A g123")
    assert repr(view).count("#!/bin/bash -l\n#SBATCH --account=g123\n") == 1
    view = shell.run_line_magic(
        "hpc_resources", "--profile lab -p debug --gpus-per-node v100:1 --gres gpu:1,tmp:1")
    assert [line for line in view.lines if "gres" in line] == ["#SBATCH --gres=tmp:1,gpu:v100:1"]


def test_cancel_a_local_job(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """%hpc_cancel answers at once without Slurm too, naming no scheduler that is not
    there, and the job ends interrupted with its output so far kept."""
    shell.run_cell_magic("sbatch", "--backend local -t 5",
                         "import time\nprint('started', flush=True)\ntime.sleep(120)")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    deadline = time.monotonic() + 60
    while "started" not in handle.log() and time.monotonic() < deadline:
        time.sleep(0.2)
    capsys.readouterr()
    shell.run_line_magic("hpc_cancel", "")
    said = capsys.readouterr().out
    assert f"job {handle.job_id}: " in said and "Slurm" not in said, said
    assert handle.wait(timeout=30) == "CANCELLED"  # as Slurm says it
    assert "started" in handle.log()
    # no results: one line from the magic, and from a fetch in a cell no traceback through
    # hpc_magics' own code (the exception is still raised, for code that catches it)
    with pytest.raises(UsageError, match=f"^job {handle.job_id} has no results: it was "
                                         "cancelled") as raised:
        shell.run_line_magic("hpc_fetch", handle.job_id)
    assert "\n" not in str(raised.value)
    capsys.readouterr()
    outcome = shell.run_cell(f"import hpc_magics\nhpc_magics.job({handle.job_id!r}).fetch()")
    assert isinstance(outcome.error_in_exec, JobFailed)
    shown = capsys.readouterr()
    [line] = [line for line in (shown.out + shown.err).splitlines() if line.strip()]
    assert line.startswith(f"JobFailed: job {handle.job_id} has no results: it was cancelled")


def test_a_local_job_stopped_by_its_time_limit_ends_timeout(
        shell: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The local executor's time limit ends a job TIMEOUT, told as Slurm's is (it used to
    reach the cell as SIGINT: a KeyboardInterrupt, FAILED, and no longer time suggested).
    The limit the backend gives the executor is made 3 s: ``-t`` counts whole minutes."""
    from hpc_magics.backends import submitit_backend

    monkeypatch.setattr(submitit_backend, "_timeout_min", lambda request: 0.05)
    with pytest.raises(UsageError, match="it reached its time limit: ask for more with -t"):
        shell.run_cell_magic("sbatch", "--backend local --wait -t 1",
                             "import time\ntime.sleep(100)\n")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    assert handle.wait(timeout=30) == "TIMEOUT"
    assert handle.end_state() == "TIMEOUT"
    assert "time" in handle.suggested_rerun()
    assert "KeyboardInterrupt" not in capsys.readouterr().out
    assert "time limit" in handle.log()
