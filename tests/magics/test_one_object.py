"""Every name sees one object after a cell (issue 20): a cell that names only ``opt`` trains
the notebook's ``model`` too, and ``opt`` still refers to it. The local backend runs the real
runner in a separate process; the torch case runs where torch is installed."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hpc_magics.shipping.analysis import analyse
from hpc_magics.shipping.packing import pack
from hpc_magics.shipping.sharing import come_back_together

SETUP = """
import numpy as np

class Model:
    def __init__(self):
        self.w = np.zeros(3)

class SGD:
    def __init__(self, params):
        self.params = list(params)
        self.steps = 0

    def step(self):
        for p in self.params:
            p += 1.0
        self.steps += 1

model = Model()
opt = SGD([model.w])
also_opt = opt          # a second name for the optimizer
weights = model.w       # a name for the array itself
unrelated = np.zeros(3)  # shares nothing: stays behind
"""


def test_pack_ships_the_names_that_share_objects_and_groups_them(shell: Any) -> None:
    shell.run_cell(SETUP)
    code = "for _ in range(3): opt.step()"
    payload = pack(code, analyse(code), shell.user_ns)
    assert payload.state_names[0] == "opt"
    assert set(payload.state_names) == {"opt", "model", "also_opt", "weights"}
    assert "model (Model, " in payload.summary() and "shares objects with opt" in payload.summary()


def test_a_cell_naming_only_opt_trains_the_notebooks_model(
        shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell(SETUP)
    unrelated = shell.user_ns["unrelated"]
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "for _ in range(3): opt.step()")
    out = capsys.readouterr().out
    ns = shell.user_ns
    assert list(ns["model"].w) == [3.0, 3.0, 3.0]
    assert ns["opt"].params[0] is ns["model"].w is ns["weights"]
    assert ns["also_opt"] is ns["opt"] and ns["opt"].steps == 3
    assert ns["unrelated"] is unrelated
    assert "came back changed in place" in out and "model" in out
    shell.run_cell("opt.step()")  # the notebook goes on training the one model
    assert list(shell.user_ns["model"].w) == [4.0, 4.0, 4.0]


def test_an_unchanged_name_comes_back_when_something_coming_back_holds_its_insides() -> None:
    w = np.zeros(3)
    model, opt, data = {"w": w}, {"params": [w], "steps": 1}, np.ones(2)
    holder = {"data": data}
    # opt comes back; model holds the array opt holds: model comes back, data stays
    moved, staying = come_back_together({"opt": opt}, {"model": model, "data": data})
    assert moved == ("model",) and list(staying) == ["data"]
    # holder comes back holding data whole: a reference to the notebook's data keeps it shared
    moved, staying = come_back_together({"holder": holder}, {"data": data})
    assert moved == () and list(staying) == ["data"]
    # a name for the array itself stays a reference, and then model need not come back
    moved, staying = come_back_together({"opt": opt}, {"model": model, "weights": w})
    assert moved == () and sorted(staying) == ["model", "weights"]


def test_only_the_optimizers_state_changed_and_the_names_still_share(shell: Any) -> None:
    shell.run_cell(SETUP)
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "opt.steps += 10")
    ns = shell.user_ns
    assert ns["opt"].steps == 10
    assert ns["opt"].params[0] is ns["model"].w


TORCH_SETUP = """
import torch
torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
"""

TORCH_TRAIN = """
for _ in range(3):
    opt.zero_grad()
    model_out = opt.param_groups[0]["params"][0].sum() ** 2
    model_out.backward()
    opt.step()
"""


def test_torch_optimizer_alone_trains_the_notebooks_model(shell: Any) -> None:
    torch = pytest.importorskip("torch")
    shell.run_cell(TORCH_SETUP)
    start = shell.user_ns["model"].weight.detach().clone()
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", TORCH_TRAIN)
    ns = shell.user_ns
    assert not torch.allclose(ns["model"].weight, start)
    assert ns["opt"].param_groups[0]["params"][0] is ns["model"].weight
    np.testing.assert_allclose(ns["model"].weight.detach().numpy(),
                               ns["opt"].param_groups[0]["params"][0].detach().numpy())


def test_a_module_the_job_cannot_import_is_one_line_naming_it_and_the_interpreter(
        shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hpc_magics.core.errors import JobFailed

    # a module only the kernel has (its folder is on the kernel's sys.path, not the job's)
    (tmp_path / "kernel_only_mod.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    shell.run_cell("import kernel_only_mod")
    sys.modules.pop("kernel_only_mod", None)
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[2]))  # this checkout only
    with pytest.raises(JobFailed) as raised:
        shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "v = kernel_only_mod.VALUE")
    message = str(raised.value)
    assert "cannot import 'kernel_only_mod', which the cell's state needs" in message
    assert f"the job's Python {sys.executable} on " in message


def test_singletons_python_shares_do_not_make_names_travel(shell: Any) -> None:
    shell.run_cell("import enum, logging\n"
                   "class Mode(enum.Enum):\n    TRAIN = 1\n"
                   "class Run:\n    def __init__(self):\n"
                   "        self.mode, self.name = Mode.TRAIN, 'r'\n"
                   "        self.log = logging.getLogger('x')\n"
                   "shipped, other = Run(), Run()")
    code = "shipped.name = 'changed'"
    payload = pack(code, analyse(code), shell.user_ns)
    assert payload.state_names == ("shipped",)  # same enum member, logger, string: not shared


SHARED_INSIDES = "holder = {'inner': [1, 2]}\nalias = holder"
READS_ONLY = "view = holder['inner']\nsize = len(view)"  # holds an object inside holder


def test_an_unchanged_name_that_comes_back_with_a_result_is_not_said_changed(
        shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell(SHARED_INSIDES)
    capsys.readouterr()
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", READS_ONLY)
    out = capsys.readouterr().out
    ns = shell.user_ns
    assert ns["view"] is ns["holder"]["inner"] and ns["alias"] is ns["holder"]  # still one
    assert ns["holder"] == {"inner": [1, 2]}
    [said] = [line for line in out.splitlines() if line.startswith("[hpc_magics] job ")]
    assert "changed in place" not in said
    assert "size, view are now in the notebook; holder, alias came back unchanged" in said


def test_an_unchanged_name_the_notebook_changed_meanwhile_is_not_said_changed_by_the_job(
        shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell(SHARED_INSIDES)
    shell.run_cell_magic("sbatch", "--backend local -t 5", READS_ONLY)
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    job_id = magics.last_job
    magics.handles[job_id].wait(timeout=60)
    holder = shell.user_ns["holder"]
    holder["n"] = 3  # the notebook goes on while the job ran
    capsys.readouterr()
    shell.run_line_magic("hpc_fetch", job_id)
    out = capsys.readouterr().out
    assert shell.user_ns["holder"] is holder and holder["n"] == 3  # the notebook's is kept
    assert "by the job" not in out and "changed in place" not in out
    assert f"holder was changed in the notebook while job {job_id} ran (the job left it " \
           "unchanged): the notebook's holder is kept" in out
