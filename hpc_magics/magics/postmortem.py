"""``%debug``, ``%tb`` and ``%xmode`` on a failed cell's node frames, as for a local failure.

The job keeps the failing cell's frames and their locals (``node/postmortem.py``). When
its failure reaches the shell, the frames are made again here as real Python frames: each
is a tiny code object compiled to fail at the node's line, under the node's file and
function names, run with the node's locals. IPython's own machinery then shows and debugs
them as any traceback: ``sys.last_traceback`` is the node's, ``%debug`` stops at its
failing line, ``up``/``down``/``p``/``ll`` see the frames and values as they were there.
"""

from __future__ import annotations

import linecache
import sys
import types
from typing import Any

from ..core.errors import JobFailed


class NotKept:
    """Stands in a frame for a local that did not pickle on the node: says its type, why."""

    def __init__(self, why: str) -> None:
        self.why = why

    def __repr__(self) -> str:
        return f"<not kept on the node: {self.why}>"


class NodeException(Exception):
    """The node's exception, when it did not pickle itself: its type and words."""


def catch_node_failures(shell: Any) -> None:
    """Show a failed job's exception with its node frames (a shell's one custom handler:
    one the user set stays theirs)."""
    if not shell.custom_exceptions:
        shell.set_custom_exc((JobFailed,), show_failure)


def show_failure(shell: Any, etype: type[BaseException], value: BaseException,
                 tb: types.TracebackType | None, tb_offset: int | None = None) -> None:
    """IPython's custom handler: the node's exception and frames when the job kept them
    (the shell's ``sys.last_*`` become theirs), else the failure as before."""
    failure = _node_failure(value)
    if failure is None:
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
        return
    error = failure.error if failure.error is not None else NodeException(str(value))
    node_tb = _rebuilt_traceback(failure, getattr(value, "job_id", ""))
    if tb is not None:  # the shell's own entry first, as for a local failure: IPython skips it
        node_tb = types.TracebackType(node_tb, tb.tb_frame, tb.tb_lasti, tb.tb_lineno)
    error = error.with_traceback(node_tb)
    shell.showtraceback((type(error), error, node_tb), tb_offset=tb_offset)
    missing = [f"{name} ({why}) in {frame.name}" for frame in failure.frames
               for name, why in frame.not_pickled.items()]
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
        print(f"[hpc_magics] the node's frames are not loaded for %debug: {why}",
              file=sys.stderr)
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
