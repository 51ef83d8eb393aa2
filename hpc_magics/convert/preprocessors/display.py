"""Remove display code (plots, ``display()``, widgets, shown values), keep computation."""

from __future__ import annotations

from typing import Any

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool, Set, Unicode

from ..cells import KEEP_TAGS
from ..script import strip_cells


class DisplayStripPreprocessor(Preprocessor):
    """Works on the whole notebook at once: a figure made in one cell may be saved in another.

    What was removed, per code cell, is in ``resources["hpc_magics"]["removed"]``.
    """

    enabled = Bool(True, help="Run this step; on by default, since adding it to a pipeline "
                   "means wanting it.").tag(config=True)
    keep_tags = Set(
        Unicode(), default_value=set(KEEP_TAGS), help="Tags of code cells kept exactly as written."
    ).tag(config=True)
    comment_removed = Bool(
        True, help="Comment removed statements out (# [display] ...) instead of deleting them."
    ).tag(config=True)

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        removed = strip_cells(nb.cells, self.keep_tags, self.comment_removed)
        resources.setdefault("hpc_magics", {})["removed"] = removed
        return nb, resources
