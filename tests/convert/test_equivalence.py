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

from .conftest import NOTEBOOKS, execute_notebook, headless_env, notebook, run_converted, tagged

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
