"""``jupyter nbconvert --to hpc_script NB.ipynb``: a notebook as a headless batch script.

The same conversion as ``hpc-magics convert`` (``script.convert_notebook``), with its choices
as the exporter's settings: one place to set each, whichever door the user takes.
"""

from __future__ import annotations

from typing import Any

from nbconvert.exporters import Exporter
from nbformat import NotebookNode
from traitlets import Bool, default

from .script import ConversionError, convert_notebook


class HpcScriptExporter(Exporter):
    """Skip tagged cells, translate magics, plain tqdm, strip display code: a script plain
    ``python`` runs."""

    export_from_notebook = "HPC batch script"
    output_mimetype = "text/x-python"
    strict = Bool(False, help="Refuse a notebook with a cell that is not Python (else: keep it "
                  "as a comment, with a warning naming the cell).").tag(config=True)
    comment_removed = Bool(True, help="Comment removed statements out (# [display] ...) instead "
                           "of deleting them.").tag(config=True)

    @default("file_extension")
    def _file_extension_default(self) -> str:
        return ".py"

    def from_notebook_node(  # type: ignore[override]  # a text exporter returns str
        self, nb: NotebookNode, resources: dict[str, Any] | None = None, **kw: Any
    ) -> tuple[str, dict[str, Any]]:
        resources = self._init_resources(resources)
        name = resources.get("metadata", {}).get("name") or "notebook"
        try:
            conversion = convert_notebook(nb, name, comment_removed=self.comment_removed,
                                          strict=self.strict)
        except ConversionError as error:
            raise ConversionError(f"{name}.ipynb: {error}") from None
        for warning in conversion.warnings:
            self.log.warning("%s", warning)
        return conversion.script, resources
