"""``tqdm.notebook`` → plain ``tqdm``: a widget progress bar cannot draw in a batch log."""

from __future__ import annotations

from typing import Any

from nbconvert.preprocessors import Preprocessor
from traitlets import Bool

from ..progress import plain_progress_bars


class ProgressBarPreprocessor(Preprocessor):
    enabled = Bool(True, help="Run this step; on by default, since adding it to a pipeline "
                   "means wanting it.").tag(config=True)

    def preprocess_cell(
        self, cell: Any, resources: dict[str, Any], index: int
    ) -> tuple[Any, dict[str, Any]]:
        if cell.cell_type == "code":
            cell.source = plain_progress_bars(cell.source)
        return cell, resources
