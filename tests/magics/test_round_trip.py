"""What comes back is what ran: shared objects stay shared, in-place changes come back,
unchanged shipped data stays in the notebook, and late child output never corrupts results.

The local backend runs the real runner in a real separate process; one test runs on the
real Slurm test cluster.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hpc_magics.attach import attach
from hpc_magics.shipping.analysis import analyse
from hpc_magics.shipping.packing import pack
from hpc_magics.shipping.stream import load_names

# A tiny model and an optimizer holding its parameters, as torch's are: the optimizer
# changes the model's arrays in place, and the training cell assigns neither.
MODEL = """
import numpy as np

class Linear:
    def __init__(self, n):
        self.w = np.zeros(n)
        self.b = np.zeros(1)

    def parameters(self):
        return [self.w, self.b]

    def gradients(self, x, y):
        error = x @ self.w + self.b - y
        return [2 * x.T @ error / len(y), np.array([2 * error.mean()])]

class SGD:
    def __init__(self, params, lr):
        self.params = list(params)
        self.lr = lr
        self.steps = 0

    def step(self, grads):
        for param, grad in zip(self.params, grads):
            param -= self.lr * grad
        self.steps += 1

rng = np.random.default_rng(0)
inputs = rng.normal(size=(64, 3))
targets = inputs @ np.array([1.0, -2.0, 0.5]) + 0.3
model = Linear(3)
opt = SGD(model.parameters(), lr=0.1)
"""

TRAIN = """
for epoch in range(20):
    opt.step(model.gradients(inputs, targets))
"""


def _expected_training(ns: dict[str, Any]) -> Any:
    """The same training, run on a copy in this process."""
    model, opt = copy.deepcopy((ns["model"], ns["opt"]))
    for _ in range(20):
        opt.step(model.gradients(ns["inputs"], ns["targets"]))
    return model


def _trained_in_place(shell: Any, out: str) -> None:
    ns = shell.user_ns
    model, opt = ns["model"], ns["opt"]
    assert opt.params[0] is model.w  # the notebook's own object graph, after fetch
    assert opt.params[1] is model.b
    assert opt.steps == 20
    assert not np.allclose(model.w, 0)
    assert "model, opt came back changed in place" in out


def test_training_in_place_comes_back_with_optimizer_still_on_the_model(
        shell: Any, job_folders: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell(MODEL)
    expected = _expected_training(shell.user_ns)
    inputs = shell.user_ns["inputs"]
    capsys.readouterr()
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", TRAIN)
    out = capsys.readouterr().out
    _trained_in_place(shell, out)
    assert np.allclose(shell.user_ns["model"].w, expected.w)
    assert np.allclose(shell.user_ns["model"].b, expected.b)
    assert shell.user_ns["inputs"] is inputs  # unchanged data stays the notebook's object
    # one more epoch in the notebook trains the object the optimizer holds
    before = shell.user_ns["model"].w.copy()
    shell.run_cell("opt.step(model.gradients(inputs, targets))")
    assert not np.allclose(shell.user_ns["model"].w, before)


def test_two_names_for_one_list_repeated_members_and_cycles_stay_shared(
        shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell("a = [1]\nb = a\nitem = {'k': 1}\nrep = [item, item]\n"
                   "cyc = [0]\ncyc.append(cyc)")
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "\n".join([
        "a.append(2)",
        "same = a is b",
        "rep[0]['k'] = 2",
        "held = rep[1] is item",
        "cyc.append(3)",
        "looped = cyc[1] is cyc",
    ]))
    out = capsys.readouterr().out
    ns = shell.user_ns
    assert ns["same"] and ns["held"] and ns["looped"]  # shared on the node too
    assert ns["a"] is ns["b"] and ns["a"] == [1, 2]
    assert ns["rep"][0] is ns["rep"][1] is ns["item"] and ns["item"] == {"k": 2}
    assert ns["cyc"][1] is ns["cyc"] and ns["cyc"][2] == 3
    assert "came back changed in place" in out and "a, b" in out


def test_large_unchanged_array_is_not_sent_back_and_a_dict_holding_it_holds_the_notebooks(
        shell: Any, job_folders: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell("import numpy as np\nbig = np.arange(2_000_000, dtype=float)\n"
                   "holder = {'big': big, 'n': 0}")
    big = shell.user_ns["big"]
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5",
                         "holder['n'] += 1\ntotal = float(big.sum())\nalias = big")
    out = capsys.readouterr().out
    ns = shell.user_ns
    assert "shipping 16.0 MB" in out  # shipped once, though two names hold it
    assert ns["big"] is big and ns["holder"]["big"] is big and ns["alias"] is big
    assert ns["holder"]["n"] == 1 and ns["total"] == float(big.sum())
    assert "holder came back changed in place" in out
    [folder] = job_folders(shell)
    assert (folder / "results.pkl").stat().st_size < 100_000  # 16 MB did not come back


def test_a_reference_to_a_name_the_notebook_lost_is_a_one_line_error(
        shell: Any, job_folders: Any) -> None:
    shell.run_cell("import numpy as np\nbig = np.ones(10)")
    shell.run_cell_magic("sbatch", "--backend local -t 5", "alias = big")
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    handle = magics.handles[magics.last_job]
    handle.wait(timeout=60)
    del shell.user_ns["big"]
    with pytest.raises(Exception, match=r"refer to the notebook's 'big'.*define it again"):
        handle.fetch({}, show=False)


TORCH_SETUP = """
import torch
torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x = torch.randn(256, 3)
y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
"""

TORCH_TRAIN = """
for epoch in range(30):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
"""


def test_torch_training_loop_trains_the_notebooks_model(
        shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    shell.run_cell(TORCH_SETUP)
    ns = shell.user_ns
    start = ns["model"].weight.detach().clone()
    x = ns["x"]
    twin = {"x": x, "y": ns["y"]}  # the same training here, on a copy, for the expected values
    twin["model"], twin["opt"] = copy.deepcopy((ns["model"], ns["opt"]))
    exec(TORCH_TRAIN, twin)  # the test's own constant
    capsys.readouterr()
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", TORCH_TRAIN)
    out = capsys.readouterr().out
    model, opt = ns["model"], ns["opt"]
    assert "model, opt came back changed in place" in out
    assert not torch.allclose(model.weight, start)
    assert torch.allclose(model.weight, twin["model"].weight)
    assert ns["loss"].item() == pytest.approx(twin["loss"].item())
    assert opt.param_groups[0]["params"][0] is model.weight  # still the model's parameters
    assert opt.state[model.weight]["momentum_buffer"] is not None
    assert ns["x"] is x  # unchanged data stays the notebook's tensor
    # the notebook goes on training the very model the optimizer holds
    before = model.weight.detach().clone()
    shell.run_cell("opt.zero_grad()\n((model(x) - y) ** 2).mean().backward()\nopt.step()")
    assert not torch.allclose(model.weight, before)


BACKGROUND_CHILD = """
import subprocess, sys
subprocess.Popen([sys.executable, "-c",
                  "import time\\nfor i in range(100):\\n    print('late line', i, flush=True)\\n"
                  "    time.sleep(0.2)"])
value = 42
"""


def test_a_child_printing_after_the_cell_never_reaches_the_results_file(
        shell: Any, job_folders: Any) -> None:
    shell.run_cell_magic("sbatch", "--backend local -t 5", BACKGROUND_CHILD)
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    job_id = magics.last_job
    magics.handles[job_id].wait(timeout=60)
    [folder] = job_folders(shell)
    output = folder / "output.txt"
    deadline = time.monotonic() + 60
    while "late line 99" not in output.read_text() and time.monotonic() < deadline:
        time.sleep(0.5)  # the child prints for 20 s, well past the cell's end
    assert "late line 99" in output.read_text()  # its late output is kept
    results = (folder / "results.pkl").read_bytes()
    assert b"late line" not in results
    handle = attach(job_id, Path(magics.jobs_root))
    values = handle.fetch({}, show=False)
    assert values["value"] == 42
    assert "late line 99" in handle.log(tail=200)  # and the job's log has it too


@pytest.mark.slurm
def test_training_in_place_on_the_cluster(shell: Any, slurm_cluster: Any,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_line_magic("hpc_resources", "--profile lab --backend slurm -t 5")
    shell.run_cell(MODEL)
    expected = _expected_training(shell.user_ns)
    capsys.readouterr()
    shell.run_cell_magic("sbatch", "--wait", TRAIN)
    magics = shell.magics_manager.registry["HpcMagicsKernel"]
    assert not magics.handles[magics.last_job].ran_locally
    _trained_in_place(shell, capsys.readouterr().out)
    assert np.allclose(shell.user_ns["model"].w, expected.w)


def test_a_result_that_does_not_pickle_is_named_and_the_rest_still_comes_back(
        shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    shell.run_cell("items = [1]\nshared = {'items': items}")
    shell.run_cell_magic("sbatch", "--backend local --wait -t 5", "\n".join([
        "import threading",
        "lock = threading.Lock()",
        "items.append(2)",
        "count = len(shared['items'])",
    ]))
    out = capsys.readouterr().out
    ns = shell.user_ns
    assert "lock did not come back: lock does not pickle" in out
    assert "lock" not in ns
    assert ns["count"] == 2 and ns["items"] == [1, 2] and ns["shared"]["items"] is ns["items"]


def test_one_pickle_for_all_names_keeps_each_names_size() -> None:
    array = np.zeros(100_000)
    box = {"array": array}
    code = "n = len(box['array']) + len(array)"
    payload = pack(code, analyse(code), {"array": array, "box": box})
    sizes = {item.name: item.size for item in payload.manifest}
    # the cell reads ``array`` first: its bytes travel once, ``box`` only refers to them
    assert sizes["array"] > 800_000 and sizes["box"] < 100
    assert sum(sizes.values()) == payload.size == len(payload.state)
    assert "array (ndarray, 800.1 kB), box (dict, 25 B)" in payload.summary()
    loaded = load_names(payload.state, payload.state_names)  # one unpickler: memo kept
    assert loaded["box"]["array"] is loaded["array"]
