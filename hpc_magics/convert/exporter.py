"""``jupyter nbconvert --to hpc_script NB.ipynb``: a notebook as a headless batch script."""

from __future__ import annotations

from typing import Any

from nbconvert.exporters import Exporter
from nbformat import NotebookNode, from_dict
from traitlets import Bool, List, default

from .script import render_script

PREPROCESSORS = [
    "hpc_magics.convert.preprocessors.CellFilterPreprocessor",
    "hpc_magics.convert.preprocessors.MagicsPreprocessor",
    "hpc_magics.convert.preprocessors.ProgressBarPreprocessor",
    "hpc_magics.convert.preprocessors.DisplayStripPreprocessor",
]


class HpcScriptExporter(Exporter):
    """Strip display code, translate magics, and write a script plain ``python`` runs."""

    export_from_notebook = "HPC batch script"
    output_mimetype = "text/x-python"
    markdown_as_comments = Bool(True, help="Keep markdown cells as comments.").tag(config=True)
    strict = Bool(
        False,
        help="Refuse a notebook with a cell that is not Python (else: keep it as a comment, "
        "with a warning naming the cell).",
    ).tag(config=True)
    default_preprocessors: List[Any] = List(
        PREPROCESSORS, help="The steps, in order: skip tagged cells, translate magics, plain "
        "tqdm, strip display code.").tag(config=True)

    @default("file_extension")
    def _file_extension_default(self) -> str:
        return ".py"

    def from_notebook_node(  # type: ignore[override]  # a text exporter returns str
        self, nb: NotebookNode, resources: dict[str, Any] | None = None, **kw: Any
    ) -> tuple[str, dict[str, Any]]:
        # Outputs never reach a script: leave them behind instead of deep-copying megabytes.
        light = from_dict(
            {
                "nbformat": nb.get("nbformat", 4),
                "nbformat_minor": nb.get("nbformat_minor", 5),
                "metadata": nb.get("metadata", {}),
                "cells": [
                    {k: v for k, v in c.items() if k != "outputs"}
                    | ({"outputs": []} if c.get("cell_type") == "code" else {})
                    for c in nb.cells
                ],
            }
        )
        resources = self._init_resources(resources)
        resources.setdefault("hpc_magics", {})["strict"] = self.strict
        light, resources = self._preprocess(light, resources)
        name = resources.get("metadata", {}).get("name") or "notebook"
        needs = resources.get("hpc_magics", {}).get("needs", ())
        script = render_script(
            name, light.cells, needs, markdown_as_comments=self.markdown_as_comments
        )
        return script, resources
