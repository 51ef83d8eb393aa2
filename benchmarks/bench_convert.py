"""Benchmark: ``hpc-magics convert`` against ``jupyter nbconvert --to script`` on one big notebook.

Builds a 500-cell notebook carrying about 50 MB of outputs (PNG figures and text), converts
it with both commands in the same run, prints the times and the ratio, and exits non-zero
if our conversion is the slower one. ``rows()`` gives the same as a benchmark row.

    python benchmarks/bench_convert.py [--cells 500] [--megabytes 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import base64
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat
from _common import at_most_times, interleaved, repeat_count
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

BIN = Path(sys.executable).parent
TIMEOUT_S = 600

CELL_SOURCES = [
    "%matplotlib inline\nimport numpy as np\nimport matplotlib.pyplot as plt\nimport pandas as pd",
    "data_{i} = np.random.default_rng({i}).normal(size=1000)\n"
    "plt.hist(data_{i}, bins=30)\nplt.title('sample {i}')\nplt.show()",
    "fig, ax = plt.subplots()\nax.plot(np.cumsum(data_{j}))\nax.set_title('walk {i}')\n"
    "fig.savefig('walk_{i}.png')",
    "summary_{i} = pd.Series(data_{j}).describe()\ndisplay(summary_{i})\nsummary_{i}",
    "!echo step {i}\n%time total_{i} = float(np.sum(data_{j} ** 2))\ntotal_{i}",
]


def build_notebook(cells: int, megabytes: float) -> nbformat.NotebookNode:
    code_cells = cells - sum(1 for i in range(cells) if i % 10 == 5)
    per_cell = int(megabytes * 1_000_000 / code_cells)
    # Random bytes so the base64 text does not compress or intern: like real PNGs.
    png = base64.b64encode(os.urandom(per_cell * 3 // 4)).decode()
    nb_cells = []
    last_data = 1
    for i in range(cells):
        if i % 10 == 5:
            nb_cells.append(new_markdown_cell(f"## Part {i // 10}\nNotes for the next cells."))
            continue
        template = CELL_SOURCES[0] if i == 0 else CELL_SOURCES[1 + i % 4]
        if template is CELL_SOURCES[1]:
            last_data = i
        source = template.format(i=i, j=last_data)
        outputs = [
            new_output("stream", name="stdout", text=f"step {i}\nWall time: 1 ms\n"),
            new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"}),
            new_output("execute_result", data={"text/plain": f"{i * 1.5}"}, execution_count=i),
        ]
        nb_cells.append(new_code_cell(source, outputs=outputs, execution_count=i))
    return new_notebook(cells=nb_cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python", "file_extension": ".py",
                          "mimetype": "text/x-python"}})


def timed(argv: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S,
                          check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{done.stderr}")
    return elapsed


def measure(cells: int = 500, megabytes: float = 50.0, repeat: int = 3) -> dict[str, Any]:
    """Median seconds of ours, nbconvert's script exporter and our nbconvert exporter."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = folder / "big.ipynb"
        nbformat.write(build_notebook(cells, megabytes), path)
        ours_argv = [str(BIN / "hpc-magics"), "convert", str(path), "-o", str(folder / "ours")]
        theirs_argv = [str(BIN / "jupyter"), "nbconvert", "--to", "script", str(path),
                       "--output-dir", str(folder / "nbconvert")]
        exporter_argv = [str(BIN / "jupyter"), "nbconvert", "--to", "hpc_script", str(path),
                         "--output-dir", str(folder / "exporter")]
        theirs, ours, exporter = interleaved(  # all see the same machine load
            repeat, lambda: timed(theirs_argv, folder), lambda: timed(ours_argv, folder),
            lambda: timed(exporter_argv, folder))
        script = (folder / "ours" / "big.py").read_text()
        return {"ours": ours, "nbconvert": theirs, "exporter": exporter,
                "size_mb": path.stat().st_size / 1e6, "lines": len(script.splitlines()),
                "display_lines": script.count("# [display]")}


def rows() -> list[dict[str, Any]]:
    m = measure(repeat=repeat_count(3))
    return [at_most_times(f"convert a 500-cell notebook with {m['size_mb']:.0f} MB of outputs "
                          "vs jupyter nbconvert --to script (s)", m["ours"], m["nbconvert"], 1.0)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=500)
    parser.add_argument("--megabytes", type=float, default=50.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    m = measure(args.cells, args.megabytes, args.repeat)
    print(f"notebook: {args.cells} cells, {m['size_mb']:.1f} MB on disk")
    print(f"hpc-magics convert:           {m['ours']:6.2f} s (median of {args.repeat})")
    print(f"jupyter nbconvert --to script: {m['nbconvert']:6.2f} s (median of {args.repeat})")
    print(f"jupyter nbconvert --to hpc_script (for information): {m['exporter']:6.2f} s")
    print(f"ratio ours/nbconvert: {m['ours'] / m['nbconvert']:.2f}")
    print(f"script: {m['lines']} lines, {m['display_lines']} display lines commented out")
    if m["ours"] > m["nbconvert"]:
        print("FAIL: hpc-magics convert is slower than jupyter nbconvert --to script")
        return 1
    print("OK: hpc-magics convert is not slower")
    return 0


if __name__ == "__main__":
    sys.exit(main())
