"""Every sbatch of the package goes through one door, ``scheduler/submit.py`` (issue 26).

Read from the source, not run: an argv whose first word is ``"sbatch"`` (a list or tuple
literal, as ``commands.run`` takes) may appear in that module only. A second sbatch path is
how a kernel once let ``SBATCH_PARTITION`` override its kernelspec.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "hpc_magics"
DOOR = PACKAGE / "scheduler" / "submit.py"


def sbatch_argvs(path: Path) -> list[int]:
    """Lines of ``path`` with a list or tuple literal starting with the word sbatch."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.List | ast.Tuple) and node.elts
            and isinstance(node.elts[0], ast.Constant) and node.elts[0].value == "sbatch"]


def test_sbatch_is_run_from_the_submission_door_only() -> None:
    found = {str(path.relative_to(PACKAGE)): lines for path in sorted(PACKAGE.rglob("*.py"))
             if (lines := sbatch_argvs(path))}
    assert list(found) == [str(DOOR.relative_to(PACKAGE))], found
