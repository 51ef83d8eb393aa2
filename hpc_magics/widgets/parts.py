"""A widget's child widgets made the first time anything reads them, hidden until shown.

Every ipywidget is a kernel-side model and comm (~0.5 ms each): a widget that declares its
parts as ``Part`` attributes pays only for those that have something to show.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets


def error_html(error: object) -> str:
    """An error's message as a widget shows it: one red line, escaped."""
    return f"<span style='color:#c62828'>{html.escape(str(error))}</span>"


def shown(widget: widgets.Widget, visible: bool) -> None:
    widget.layout.display = None if visible else "none"


class Part:
    """A child widget made the first time anything reads it, hidden until shown. The owner
    keeps ``_parts`` (name → widget made), a ``_making`` lock, ``_make_<group>(name)`` (the
    parts of its group, by name) and ``_place()``."""

    def __init__(self, group: str) -> None:
        self.group = group  # the maker (``_make_<group>``) that builds this part

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, widget: Any, owner: type | None = None) -> Any:
        if widget is None:
            return self
        with widget._making:  # the monitor thread renders too: one part, made once
            if self.name not in widget._parts:
                widget._parts.update(getattr(widget, f"_make_{self.group}")(self.name))
                widget._place()
            return widget._parts[self.name]
