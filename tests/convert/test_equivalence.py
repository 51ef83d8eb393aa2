"""The converted script computes what the notebook computed, headless, under plain python.

Each notebook writes ``results.json``; the original runs on a real python3 kernel (nbclient),
the script with plain python in an environment that would open windows if it could.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from .conftest import (
    NOTEBOOKS,
    assert_same_variables,
    execute_notebook,
    headless_env,
    notebook,
    run_converted,
    runs,
    tagged,
)

WORKSHOP = sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
FILES_WRITTEN = {
    "weather_pandas": ["rolling_mean.png", "results.json"],
    "training_loop": ["loss_curve.png", "weights.npy", "results.json"],
    "image_shell": ["small.png", "filters.py", "data/sample_3.txt", "results.json"],
}


def _results(folder: Path) -> dict[str, object]:
    return json.loads((folder / "results.json").read_text())


def test_workshop_notebooks_are_present() -> None:
    assert set(WORKSHOP) == set(FILES_WRITTEN)


@pytest.mark.parametrize("name", WORKSHOP)
def test_workshop_notebook_same_values_headless(name: str, tmp_path: Path,
                                                viewer_trap: Path) -> None:
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    execute_notebook(nb, tmp_path / "notebook")
    script = tmp_path / "job" / f"{name}.py"
    subprocess.run([sys.executable, "-m", "hpc_magics.cli", "convert",
                    str(NOTEBOOKS / f"{name}.ipynb"), "-o", str(script.parent)],
                   check=True, timeout=120, capture_output=True, env=headless_env(None))
    result = subprocess.run([sys.executable, script.name], cwd=script.parent, timeout=120,
                            capture_output=True, text=True, env=headless_env(viewer_trap),
                            check=False)
    assert result.returncode == 0, result.stderr
    assert _results(tmp_path / "job") == _results(tmp_path / "notebook")
    for written in FILES_WRITTEN[name]:
        assert (script.parent / written).exists(), written
    assert not (viewer_trap / "STARTED").exists(), "an image viewer or browser was started"
    assert "get_ipython" not in script.read_text()


def test_every_construct_in_one_notebook_same_values(tmp_path: Path, viewer_trap: Path) -> None:
    """A corpus notebook mixing display and computation in the same cells."""
    nb = notebook(
        "%matplotlib inline\nimport json\nimport numpy as np\nimport matplotlib.pyplot as plt\n"
        "import pandas as pd\nfrom IPython.display import display, HTML, clear_output\n"
        "from tqdm.notebook import tqdm\nfrom PIL import Image",
        "rng = np.random.default_rng(7)\ndata = pd.DataFrame({'x': rng.normal(size=200),"
        " 'g': rng.integers(0, 3, 200)})\ndisplay(data.head())\ndata.describe()",
        "means = data.groupby('g').x.mean()\nmeans.plot.bar()\nplt.show()\n"
        "counts, edges, _ = plt.hist(data.x, bins=8)\nplt.close()\ncounts",
        "fig, ax = plt.subplots()\nline, = ax.plot(np.sort(data.x))\n"
        "n_points = len(line.get_xdata())\nax.set_title('sorted')\nfig",
        "steps = []\nfor i in tqdm(range(5)):\n    steps.append(i ** 2)\n"
        "    clear_output(wait=True)\n"
        "    display(HTML(f'<i>{i}</i>'))",
        "image = Image.fromarray(np.full((4, 4), 200, dtype=np.uint8))\nimage.show()\n"
        "brightness = int(np.asarray(image).mean())",
        "listing = !printf 'a\\nb\\n'\n%time total = int(counts.sum())",
        tagged("print('interactive only')", "hpc-skip"),
        "results = {'means': means.round(6).tolist(), 'counts': counts.tolist(),\n"
        "           'n_points': n_points, 'steps': steps, 'brightness': brightness,\n"
        "           'listing': listing, 'total': total}\n"
        "json.dump(results, open('results.json', 'w'))")
    execute_notebook(nb, tmp_path / "notebook")
    script, _ = run_converted(nb, tmp_path / "job", viewer_trap)
    assert _results(tmp_path / "job") == _results(tmp_path / "notebook")
    # the figure whose line data is read by computation is kept; the others are not
    assert "line, = ax.plot(np.sort(data.x))" in script
    assert "# [display] means.plot.bar()" in script
    assert not (viewer_trap / "STARTED").exists()


# ---------------------------------------------------------------------- every variable
SIDE_EFFECTS = notebook(
    "import collections\nimport queue\nimport random\nimport numpy as np\nimport pandas as pd\n"
    "import matplotlib.pyplot as plt",
    "frame = pd.DataFrame({'a': [1.0, None, 3.0], 'b': [3, 2, 1]})\nframe.dropna(inplace=True)",
    "frame.sort_values('b', inplace=True)",
    "jobs = queue.Queue()\nfor i in range(3):\n    jobs.put(i)\njobs.get()",
    "left = jobs.qsize()",
    "numbers = iter(range(5))\nnext(numbers)",
    "rest = list(numbers)",
    "items = [1, 2, 3]\nitems.pop()",
    "class Model:\n    def __init__(self):\n        self.training = False\n"
    "    def train(self):\n        self.training = True\n        return self\n\n"
    "model = Model()\nmodel.train()",
    "training = model.training",
    "counts = collections.defaultdict(int)\ncounts['seen']",
    "settings = {}\nsettings.setdefault('depth', 3)",
    "random.seed(0)\nrandom.random()",
    "after = random.random()",
    "rng = np.random.default_rng(0)\nrng.normal(size=3)",
    "after_np = rng.normal()",
    "squares = (i * i for i in range(4))\nsorted(squares)",
    "squares_left = list(squares)",
    "frame.describe()",
    "frame.head()",
    "frame.plot.bar()\nplt.show()",
    "frame.style.highlight_max()",
    "fig, ax = plt.subplots()\nax.plot(frame.b)\nfig",
    "from IPython.display import display\nletters = iter('abc')\ndisplay(next(letters))\n"
    "plt.plot(rng.normal(size=4))\nplt.plot(frame.b, np.sin(frame.b))\nplt.show()",
    "def draw():\n    plt.plot(rng.normal(size=3))\n\ndraw()",
    "panels, axes = plt.subplots(2)\nfor ax in axes:\n    ax.hist(rng.normal(size=9))\nplt.show()",
    "line, = plt.plot(rng.normal(size=4))\nheights, edges, bars = plt.hist(rng.normal(size=20))\n"
    "plt.close()",
    "after_plots = (next(letters), float(rng.normal()))",
    "summary = {'rows': len(frame), 'b': frame.b.tolist()}",
)

IPYTHON_SYNTAX = notebook(
    "import os",
    "from __future__ import annotations\n\ndef scale(x: UndefinedType) -> Unknown:\n"
    "    return 2 * x\n\nannotations = dict(scale.__annotations__)",
    "os?",
    "??os.path",
    "os.sep??",
    "%pinfo os",
    "first = 1\nos.path?\nsecond = first + 1",
    "mkdir -p data",
    "%%writefile data/a.txt\nhello\nworld\n",
    "cat data/a.txt",
    "lines = !cat data/a.txt",
    "listed = %sx ls data",
    "cd data",
    "here = os.path.basename(os.getcwd())",
    "cd ..",
    "ls",
    "%env HPC_TEST_VALUE=42",
    "env_value = os.environ['HPC_TEST_VALUE']",
    ",print hello world",
    "%time total = sum(range(10))",
    "%%time\nsquares = [i * i for i in range(5)]",
    "%timeit -n 1 -r 1 sum(range(10))",
    "%%bash\necho from-bash > data/b.txt",
    "bash_text = open('data/b.txt').read()",
    "%%capture\nprint('hidden')\ncaptured_value = 7",
    "%%capture kept_output\nprint('kept')",
    "kept_text = kept_output.stdout",
    "%set_env HPC_OTHER=b",
    "other_value = os.environ['HPC_OTHER']",
    "%%writefile helper.py\nHELPED = 3\n",
    "%run helper.py",
    "%%file twice_ext.py\ndef load_ipython_extension(ip):\n"
    "    ip.register_magic_function(lambda line: int(line) * 2, magic_name='twice')\n",
    "%load_ext twice_ext",
    "doubled = %twice 21",
    "%matplotlib inline\n%load_ext autoreload\n%autoreload 2",
    "%who",
    "pwd",
)


def test_side_effecting_last_expressions_compute_the_same(tmp_path: Path,
                                                          viewer_trap: Path) -> None:
    script = assert_same_variables(SIDE_EFFECTS, tmp_path, viewer_trap)
    for statement in ("frame.dropna(inplace=True)", "jobs.get()", "next(numbers)", "items.pop()",
                      "model.train()", "counts['seen']", "random.random()", "sorted(squares)"):
        assert runs(script, statement), statement
    assert runs(script, "next(letters)") and not runs(script, "display(next(letters))")
    for display in ("frame.describe()", "frame.plot.bar()", "frame.style.highlight_max()",
                    "plt.plot(frame.b, np.sin(frame.b))"):
        assert not runs(script, display), display


def test_every_ipython_construct_computes_the_same(tmp_path: Path, viewer_trap: Path) -> None:
    script = assert_same_variables(IPYTHON_SYNTAX, tmp_path, viewer_trap)
    assert "get_ipython" not in script
    lines = script.splitlines()
    first_code = next(i for i, line in enumerate(lines) if line.startswith(("import", "from")))
    assert lines[first_code] == "from __future__ import annotations"
    assert runs(script, "os.chdir(") and runs(script, "'cat data/a.txt'")
