"""``%debug``, ``%tb`` and ``%xmode`` on a failed cell's node frames, as for a local failure.

The job keeps the failing cell's frames and their locals (``node/postmortem.py``). When
a fetch brings its failure (in a cell, or by the widget's Fetch button), the frames are
made again here as real Python frames: each is a tiny code object compiled to fail at the
node's line, under the node's file and function names, run with the node's locals.
IPython's own machinery then shows and debugs them as any traceback: ``sys.last_traceback``
is the node's, ``%debug`` stops at its failing line, ``up``/``down``/``p``/``ll`` see the
frames and values as they were there.
"""

from __future__ import annotations

import linecache
import sys
import types
from typing import Any

from ..core.errors import FETCHED_FAILURE_HOOKS, JobFailed


class NotKept:
    """Stands in a frame for a local that did not pickle on the node: says its type, why."""

    def __init__(self, why: str) -> None:
        self.why = why

    def __repr__(self) -> str:
        return f"<not kept on the node: {self.why}>"


class NodeException(Exception):
    """The node's exception, when it did not pickle itself: its type and words."""


def catch_node_failures(shell: Any) -> None:
    """Keep every fetched failure's node frames for ``%debug`` and show a failed job's
    exception with them (a shell's one custom handler: one the user set stays theirs)."""
    if keep_for_debugger not in FETCHED_FAILURE_HOOKS:
        FETCHED_FAILURE_HOOKS.append(keep_for_debugger)
    if not shell.custom_exceptions:
        shell.set_custom_exc((JobFailed,), show_failure)


def keep_for_debugger(failure: Any) -> None:
    """The one door of a fetched failure (``JobHandle.fetch`` calls it for each, before it
    raises): the node's exception, its frames rebuilt, left where ``%debug`` and ``%tb``
    look (``sys.last_*``; IPython's traceback handler forgets an older one), also when no
    cell's exception handling follows: the widget's Fetch button. Kept on the failure
    (``on_node``) for the shell's handler."""
    kept = _node_failure(failure)
    if kept is None:
        return
    error = kept.error if kept.error is not None else NodeException(str(failure))
    frames = _rebuilt_traceback(kept, failure.job_id)
    missing = [f"{name} ({why}) in {frame.name}" for frame in kept.frames
               for name, why in frame.not_pickled.items()]
    failure.on_node = (error, frames, missing)
    fetching = sys._getframe(1)  # the fetch's frame stands first, as a shell's entry would
    trace = types.TracebackType(frames, fetching, fetching.f_lasti, fetching.f_lineno)
    sys.last_type, sys.last_value, sys.last_traceback = type(error), error, trace
    if sys.version_info >= (3, 12):
        sys.last_exc = error
    error.with_traceback(trace)
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:  # its handler debugs the last traceback it showed, if it has one
        shell.InteractiveTB.tb = None


def show_failure(shell: Any, etype: type[BaseException], value: BaseException,
                 tb: types.TracebackType | None, tb_offset: int | None = None) -> None:
    """IPython's custom handler: the node's exception and frames when the job kept them
    (the shell's ``sys.last_*`` become theirs), else the failure as before."""
    node = getattr(value, "on_node", None)
    if node is None:
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
        return
    error, trace, missing = node
    if tb is not None:  # the shell's own entry first, as for a local failure: IPython skips it
        trace = types.TracebackType(trace, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
    error = error.with_traceback(trace)
    shell.showtraceback((type(error), error, trace), tb_offset=tb_offset)
    print(f"(raised in {value}; %debug inspects the node's frames"
          + (f"; not kept: {', '.join(missing)})" if missing else ")"), file=sys.stderr)


def _node_failure(value: BaseException) -> Any:
    """The frames the job kept in its folder, or None (none kept, or not loadable: the
    text traceback is still shown)."""
    folder = getattr(value, "folder", None)
    if folder is None:
        return None
    from ..jobfolder.files import POSTMORTEM_FILE, NodeFailure, load_own

    try:
        failure = load_own(folder / POSTMORTEM_FILE)
    except FileNotFoundError:
        return None
    except Exception as why:  # owner check, a class the notebook lacks: say, show the text
        print(f"[hpc_magics] the node's frames are not loaded for %debug: {why}", file=sys.stderr)
        return None
    return failure if isinstance(failure, NodeFailure) and failure.frames else None


def _rebuilt_traceback(failure: Any, job_id: str) -> types.TracebackType | None:
    """Real frames and traceback entries standing for the node's, outermost first."""
    names = {name: f"{name[:-1]}, job {job_id}>" if name.endswith(">") else name
             for name in failure.sources}
    for name, lines in failure.sources.items():  # ll, list and tracebacks show the cell
        linecache.cache[names[name]] = (sum(map(len, lines)), None, lines, names[name])
    cell: dict[str, Any] | None = None
    entries = []
    for record in failure.frames:
        values = dict(record.values)
        values.update((name, NotKept(why)) for name, why in record.not_pickled.items())
        if record.in_cell and cell is None:
            cell = values  # the cell's own frame: its locals are its globals
        if record.in_cell:
            namespace = cell
        elif record.module in sys.modules:
            namespace = vars(sys.modules[record.module])
        else:
            namespace = {"__name__": record.module}
        entries.append(_frame(record, names.get(record.filename, record.filename),
                              namespace, values))
    trace = None
    for frame, lasti, lineno in reversed(entries):
        trace = types.TracebackType(trace, frame, lasti, lineno)
    return trace


def _frame(record: Any, filename: str, namespace: dict[str, Any] | None,
           values: dict[str, Any]) -> tuple[types.FrameType, int, int]:
    """A frame at ``record``'s line of ``filename`` in its function, with ``values`` as
    its locals: code that fails right there (its first line the function's, so ``ll``
    finds the function), run and caught."""
    lineno = record.lineno or record.firstlineno or 1
    first = min(record.firstlineno or lineno, lineno)
    code = compile("\n" * (lineno - first) + "0 / 0", filename, "exec")
    names = {"co_qualname": record.name} if hasattr(code, "co_qualname") else {}  # 3.11+
    code = code.replace(co_name=record.name, co_firstlineno=first, **names)
    try:
        exec(code, values if namespace is None else namespace, values)  # our code: "0 / 0"
    except ZeroDivisionError as stop:
        made = stop.__traceback__.tb_next if stop.__traceback__ else None
        assert made is not None
        return made.tb_frame, made.tb_lasti, lineno
    raise AssertionError("the stand-in frame did not stop")
