"""``display()`` and ``plt.show()`` on the node, shown in the cell as they are made.

Each becomes a display record (``jobfolder/live_stream.py``) written to a pipe of the
runner's output copier (``node/tee.py``), which puts it in the job's stream file after
what the cell printed before it: the notebook shows text and displays in the order made.
Outside a running cell (no copier to send to) a display prints its text.
"""

from __future__ import annotations

import base64
import importlib.abc
import importlib.machinery
import io
import json
import os
import select
import sys
from typing import Any

from ..jobfolder.live_stream import record

FIGURE_BACKEND = f"module://{__package__}.figure_backend"  # plt.show() calls show() below
_pipe: int | None = None  # the copier's display pipe while the cell runs
_ack: int | None = None  # the copier's word that it put a display in the stream
ACK_WAIT_S = 30.0  # a copier that says nothing for this long is stuck: the cell goes on
_DPI = 100  # as the figures saved at the end
# the numbers of the pyplot figures displayed in the cell: not shown again at its end
shown_figures: set[int] = set()


def connect(pipe: int | None, ack: int | None) -> None:
    global _pipe, _ack
    _pipe, _ack = pipe, ack
    if not any(isinstance(finder, _IPythonDisplay) for finder in sys.meta_path):
        sys.meta_path.insert(0, _IPythonDisplay())
    for name in (_IPYTHON_DISPLAY, "IPython.display"):  # imported already (unpickling)
        if name in sys.modules:
            sys.modules[name].__dict__["display"] = display


_IPYTHON_DISPLAY = "IPython.core.display_functions"  # IPython.display's display() is its


class _IPythonDisplay(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``from IPython.display import display`` in a cell (as notebooks and libraries do)
    gives this module's ``display``: IPython's own, with no kernel around, prints the
    object's text. Put in when IPython loads it, not by importing IPython here (0.1 s,
    and most cells never use it)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != _IPYTHON_DISPLAY:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None and spec.loader is not None:
            self._loader, spec.loader = spec.loader, self
        return spec

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        module.display = display


def _is_figure(value: Any) -> bool:
    return type(value).__name__ == "Figure" and hasattr(value, "savefig")


# the rich forms a notebook shows, by the method an object offers each with (IPython's)
_REPR_METHODS = (("text/html", "_repr_html_"), ("text/markdown", "_repr_markdown_"),
                 ("image/svg+xml", "_repr_svg_"), ("image/png", "_repr_png_"),
                 ("image/jpeg", "_repr_jpeg_"), ("text/latex", "_repr_latex_"),
                 ("application/json", "_repr_json_"))


def mime_bundle(value: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(data, metadata) as a notebook's display makes them, from the object's own
    ``_repr_*_`` methods (IPython's protocol; the node needs no IPython for it)."""
    data: dict[str, Any] = {"text/plain": repr(value)}
    metadata: dict[str, Any] = {}
    if _is_figure(value):
        png = io.BytesIO()
        value.savefig(png, format="png", dpi=_DPI, bbox_inches="tight")
        data["image/png"] = base64.b64encode(png.getvalue()).decode("ascii")
        return data, metadata
    if isinstance(value, type):
        return data, metadata  # a class: its methods need an instance
    bundle = _call(value, "_repr_mimebundle_", include=None, exclude=None)
    if isinstance(bundle, tuple) and len(bundle) == 2:
        bundle, extra = bundle
        metadata.update(extra or {})
    if isinstance(bundle, dict):
        data.update(bundle)
    for mime, method in _REPR_METHODS:
        if mime in data:
            continue
        shown = _call(value, method)
        if isinstance(shown, tuple) and len(shown) == 2:
            shown, metadata[mime] = shown
        if isinstance(shown, bytes):
            shown = base64.b64encode(shown).decode("ascii")
        if shown is not None:
            data[mime] = shown
    return data, metadata


def _call(value: Any, method: str, **arguments: Any) -> Any:
    """The object's ``method(**arguments)``, or None when it has none or it fails."""
    function = getattr(value, method, None)
    if not callable(function):
        return None
    try:
        return function(**arguments)
    except Exception:
        return None


def _send(pipe: int, message: dict[str, Any]) -> None:
    sys.stdout.flush()  # what the cell printed before comes before it
    sys.stderr.flush()
    try:
        text = json.dumps(message)
    except (TypeError, ValueError):  # a form that is no JSON: the text is enough
        text = json.dumps({**message, "data": {"text/plain": message["data"]["text/plain"]},
                           "metadata": {}})
    view = memoryview(record("display", text.encode()))
    while view:
        view = view[os.write(pipe, view):]
    # and what it prints next comes after it: the copier has put it in the stream
    if _ack is not None and select.select([_ack], [], [], ACK_WAIT_S)[0]:
        os.read(_ack, 1)


class DisplayHandle:
    """What ``display(..., display_id=True)`` returns: ``update`` replaces the content."""

    def __init__(self, display_id: str) -> None:
        self.display_id = display_id

    def update(self, value: Any) -> None:
        display(value, display_id=self.display_id, update=True)

    def display(self, value: Any) -> None:
        display(value, display_id=self.display_id)


def display(*objects: Any, display_id: Any = None, update: bool = False,
            **_: Any) -> DisplayHandle | None:
    """The node's ``display``: each object into the cell, now (without a copier: its text)."""
    if display_id is True:
        display_id = os.urandom(8).hex()
    pipe = _pipe
    for value in objects:
        if pipe is None:
            if not _is_figure(value):  # kept: saved with the other figures at the end
                print(repr(value))
            continue
        data, metadata = mime_bundle(value)
        if _is_figure(value) and getattr(value, "number", None) is not None:
            shown_figures.add(value.number)
        try:
            _send(pipe, {"data": data, "metadata": metadata, "display_id": display_id,
                         "update": bool(update)})
        except OSError:  # the copier is gone (killed): the text, into the log at least
            print(data.get("text/plain", repr(value)))
    return DisplayHandle(str(display_id)) if display_id is not None else None


def show(*_: Any, **__: Any) -> None:
    """``plt.show()`` on the node: every open figure into the cell, then closed."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None or _pipe is None:
        return
    for number in pyplot.get_fignums():
        display(pyplot.figure(number))
    pyplot.close("all")
