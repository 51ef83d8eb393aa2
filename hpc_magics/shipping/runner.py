"""Runs a cell on the compute node: rebuild its namespace, execute, save what it made.

This module is imported on the node by the job, so it stays small: standard library,
cloudpickle, and matplotlib only when the cell already used it.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import linecache
import os
import pickle
import sys
import tempfile
import threading
import traceback
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import cloudpickle

from .packing import Payload

RESULTS_FILE = "results.pkl"
OUTPUT_FILE = "output.txt"
FIGURES_DIR = "figures"
CELL_FILENAME = "<%%sbatch cell>"


@dataclass(frozen=True)
class CellResult:
    """What the job sends back; stored as ``results.pkl`` in the job folder."""

    values: dict[str, bytes] = field(default_factory=dict)  # name → cloudpickled value
    modules: dict[str, str] = field(default_factory=dict)  # name → module to import
    last_value: bytes | None = None
    last_value_repr: str | None = None
    skipped: dict[str, str] = field(default_factory=dict)  # name → why it did not come back
    figures: tuple[str, ...] = ()
    error_type: str | None = None
    error_message: str | None = None
    remote_traceback: str | None = None
    hostname: str = ""


def _pump(source_fd: int, target_fd: int, copy: BinaryIO, lock: threading.Lock) -> None:
    with os.fdopen(source_fd, "rb", buffering=0) as source:
        while chunk := source.read(65536):
            os.write(target_fd, chunk)
            with lock:
                copy.write(chunk)
                copy.flush()


@contextlib.contextmanager
def _tee_output(copy_path: Path) -> Iterator[None]:
    """Everything written to stdout and stderr, by Python, C code or child processes
    (``!cmd``), goes to the job's logs as before and also to ``copy_path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    lock = threading.Lock()
    saved: dict[int, int] = {}
    pumps = []
    with open(copy_path, "ab") as copy:
        for fd in (1, 2):
            read_end, write_end = os.pipe()
            saved[fd] = os.dup(fd)
            os.dup2(write_end, fd)
            os.close(write_end)
            pump = threading.Thread(target=_pump, args=(read_end, saved[fd], copy, lock),
                                    daemon=True)
            pump.start()
            pumps.append(pump)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, original in saved.items():
                os.dup2(original, fd)  # the pipe closes: its pump sees the end
            for pump in pumps:
                pump.join(timeout=5)  # a background child may keep the pipe open
            for original in saved.values():
                os.close(original)


def _node_display(*objects: Any, **_: Any) -> None:
    """``display`` on a node: figures are kept (saved at the end), the rest printed."""
    for value in objects:
        if type(value).__name__ == "Figure" and hasattr(value, "savefig"):
            continue  # still open: saved as PNG with the other figures when the cell ends
        print(repr(value))


def _rebuild_namespace(payload: Payload) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__,
                                 "display": _node_display}
    for name, module_name in payload.modules.items():
        namespace[name] = importlib.import_module(module_name)
    for name, blob in payload.blobs.items():
        namespace[name] = cloudpickle.loads(blob)
    return namespace


def _save_figures(folder: Path) -> tuple[str, ...]:
    """Save every open matplotlib figure as PNG (only if the cell used pyplot)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return ()
    saved = []
    target = folder / FIGURES_DIR
    for number in pyplot.get_fignums():
        target.mkdir(exist_ok=True)
        path = target / f"figure-{number}.png"
        pyplot.figure(number).savefig(path, dpi=100, bbox_inches="tight")
        saved.append(str(path.relative_to(folder)))
    pyplot.close("all")
    return tuple(saved)


def _cell_traceback(error: BaseException) -> str:
    """The traceback from the cell's own frames on: the runner's frames are noise."""
    trace = error.__traceback__
    while trace is not None and trace.tb_frame.f_code.co_filename != CELL_FILENAME:
        trace = trace.tb_next
    return "".join(traceback.format_exception(type(error), error, trace or error.__traceback__))


def _write_atomically(path: Path, data: bytes) -> None:
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(handle, "wb") as stream:
        stream.write(data)
    os.replace(temporary, path)


def execute(payload: Payload, namespace: dict[str, Any]) -> tuple[bool, Any]:
    """Run the code in ``namespace``; return (has_last_value, last_value)."""
    # tracebacks show the cell's lines, as they do in the notebook
    linecache.cache[CELL_FILENAME] = (len(payload.code), None,
                                      payload.code.splitlines(True), CELL_FILENAME)
    module = ast.parse(payload.code, filename=CELL_FILENAME)
    last: ast.expr | None = None
    if payload.capture_last_expression and module.body and isinstance(module.body[-1], ast.Expr):
        final_statement = module.body.pop()
        assert isinstance(final_statement, ast.Expr)
        last = final_statement.value
    exec(compile(module, CELL_FILENAME, "exec"), namespace)
    if last is None:
        return False, None
    expression = ast.Expression(last)
    return True, eval(compile(expression, CELL_FILENAME, "eval"), namespace)


def _collect(payload: Payload, namespace: dict[str, Any]) -> tuple[dict[str, bytes], dict[str, str],
                                                                     dict[str, str]]:
    values: dict[str, bytes] = {}
    modules: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for name in payload.result_names:
        if name not in namespace:
            continue
        value = namespace[name]
        if isinstance(value, types.ModuleType):
            modules[name] = value.__name__
            continue
        try:
            values[name] = cloudpickle.dumps(value)
        except Exception as error:
            skipped[name] = f"{type(value).__name__} does not pickle ({error})".splitlines()[0]
    return values, modules, skipped


def run_cell(payload: Payload, folder: str) -> dict[str, Any]:
    """Entry point the job calls (through submitit). Raises again if the cell raised."""
    job_folder = Path(folder)
    os.environ.setdefault("MPLBACKEND", "Agg")  # a job has no display; never open a window
    hostname = os.uname().nodename
    # In a job with several tasks every task runs the cell (torch.distributed, mpi4py);
    # task 0 speaks for the job: its output and results come back, the others only log.
    lead_task = os.environ.get("SLURM_PROCID", "0") == "0"
    output = job_folder / OUTPUT_FILE if lead_task else Path(os.devnull)
    with _tee_output(output):
        failure: BaseException | None = None
        try:
            namespace = _rebuild_namespace(payload)
            has_last, last_value = execute(payload, namespace)
        except BaseException as error:  # the user's error, reported on fetch
            failure = error
            remote = _cell_traceback(error)
            namespace, has_last, last_value = {}, False, None
        figures = _save_figures(job_folder) if lead_task else ()
    if failure is not None:
        sys.stderr.write(remote)  # into the job's log, not into the cell's output
        if not lead_task:
            raise failure
        result = CellResult(figures=figures, error_type=type(failure).__name__,
                            error_message=str(failure), remote_traceback=remote,
                            hostname=hostname)
        _write_atomically(job_folder / RESULTS_FILE, pickle.dumps(result))
        raise failure
    if not lead_task:
        return {"names": [], "figures": []}
    values, modules, skipped = _collect(payload, namespace)
    last_blob = last_repr = None
    if has_last and last_value is not None:
        last_repr = repr(last_value)[:10000]
        try:
            last_blob = cloudpickle.dumps(last_value)
        except Exception:
            last_blob = None
    result = CellResult(values=values, modules=modules, last_value=last_blob,
                        last_value_repr=last_repr, skipped=skipped, figures=figures,
                        hostname=hostname)
    _write_atomically(job_folder / RESULTS_FILE, pickle.dumps(result))
    return {"names": sorted(values) + sorted(modules), "figures": list(figures)}
