"""A failed cell's frames kept for ``%debug`` in the notebook (``magics/postmortem.py``):
from the cell's own frame on, each frame's place and the locals that pickle (the others
named, with why), in ``postmortem.pkl``, written before the results.
"""

from __future__ import annotations

import linecache
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

import cloudpickle

from ..jobfolder.files import POSTMORTEM_FILE, NodeFailure, NodeFrame, write_atomically
from ..shipping.stream import PROTOCOL, pickling_error

# a local bigger than this (a shipped data set) is named, not copied into the file
LOCAL_MAX_BYTES = 64 << 20


def keep_frames(error: BaseException, trace: TracebackType | None, folder: Path) -> None:
    """Store the frames of ``trace`` (the cell's first) and their locals in ``folder``."""
    frames = []
    cell_globals = trace.tb_frame.f_globals if trace is not None else None
    sources: dict[str, list[str]] = {}
    while trace is not None:
        frame, code = trace.tb_frame, trace.tb_frame.f_code
        values, not_pickled = _picklable(frame.f_locals)
        frames.append(NodeFrame(
            filename=code.co_filename, lineno=trace.tb_lineno, name=code.co_name,
            firstlineno=code.co_firstlineno, module=frame.f_globals.get("__name__"),
            in_cell=frame.f_globals is cell_globals, values=values, not_pickled=not_pickled))
        if code.co_filename.startswith("<"):  # the cell: no file the notebook could read
            sources[code.co_filename] = linecache.getlines(code.co_filename)
        trace = trace.tb_next
    failure = NodeFailure(frames=tuple(frames),
                          error=error if pickling_error(error) is None else None,
                          sources=sources)
    try:
        data = cloudpickle.dumps(failure, protocol=PROTOCOL)
        write_atomically(folder / POSTMORTEM_FILE, data, durable=True)
    except Exception as why:  # each pickled alone; the results still go back
        sys.stderr.write(f"[hpc_magics] the failed cell's frames were not kept for %debug "
                         f"({type(why).__name__}: {why})\n".splitlines()[0] + "\n")


def _picklable(names: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    values: dict[str, Any] = {}
    not_pickled: dict[str, str] = {}
    for name, value in names.items():
        if name.startswith("__") and name.endswith("__"):
            continue  # __builtins__ and the like: the notebook has its own
        if (why := pickling_error(value, max_bytes=LOCAL_MAX_BYTES)) is None:
            values[name] = value
        else:
            kind = type(value)
            not_pickled[name] = (f"{kind.__module__}.{kind.__qualname__}: "
                                 f"{why}".splitlines()[0][:200])
    return values, not_pickled
