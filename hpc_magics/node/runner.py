"""Runs a cell on the compute node: rebuild its namespace, execute, save what it made.

This module is imported on the node by the job, so it stays small: standard library,
cloudpickle, and matplotlib only when the cell already used it.
"""

from __future__ import annotations

import ast
import contextlib
import linecache
import os
import reprlib
import select
import signal
import subprocess
import sys
import time
import traceback
import types
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..core.scale import ScaleOptions
from ..jobfolder.files import (
    FIGURES_DIR,
    OUTCOME_FILE,
    OUTPUT_FILE,
    RESULTS_FILE,
    CellResult,
    load_own,
    write_results,
)
from ..jobfolder.live_stream import STREAM_FILE
from ..jobfolder.tasks import PAYLOAD_FILE, task_dir
from ..shipping.buffers import unpack
from ..shipping.main_guard import guard_actions
from ..shipping.packing import Payload
from ..shipping.sharing import come_back_together
from ..shipping.stream import dump_results, fingerprint, pickling_error
from . import live_display, tee
from .postmortem import keep_frames
from .task import NodeTask, Requeued
from .usage_recorder import attempt_id
from .worker_main import WORKER_PAYLOAD, as_main, cell_module

CELL_FILENAME = "<%%sbatch cell>"


@contextlib.contextmanager
def _tee_output(copy_path: Path, stream_path: Path) -> Iterator[None]:
    """Everything written to stdout and stderr (by Python, C code or child processes) goes
    to the job's logs, to ``copy_path`` and, as records the notebook shows live, to
    ``stream_path``, with the cell's displays in the order made. The copier is a separate
    process (``tee.py``): a child still writing after the cell never hits a descriptor
    this process reuses (the results file)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pipes = {fd: os.pipe() for fd in (1, 2)}
    display_read, display_write = os.pipe()
    ack_read, ack_write = os.pipe()  # the copier's word that a display is in the stream
    theirs = (pipes[1][0], pipes[2][0], display_read, ack_write)
    # waited for with a time-out below; it outlives us only while a child still writes
    copier = subprocess.Popen(  # noqa: S603 - argv list, no shell
        # -S: no site-packages, a standard-library script starts faster (the cell waits)
        [sys.executable, "-S", tee.__file__, str(copy_path), str(stream_path),
         *map(str, theirs)], pass_fds=theirs, stdin=subprocess.DEVNULL)
    os.close(display_read)
    os.close(ack_write)
    saved: dict[int, int] = {}
    for fd, (read_end, write_end) in pipes.items():
        os.close(read_end)  # the copier has it
        saved[fd] = os.dup(fd)
        os.dup2(write_end, fd)
        os.close(write_end)
    # a pipe makes Python's stdout block-buffered: each line goes out as a local cell's does
    line_buffered = bool(getattr(sys.stdout, "line_buffering", False))
    _reconfigure(sys.stdout, line_buffering=True)
    live_display.connect(display_write, ack_read)
    try:
        yield
    finally:
        live_display.connect(None, None)
        os.close(display_write)
        os.close(ack_read)
        sys.stdout.flush()
        sys.stderr.flush()
        _reconfigure(sys.stdout, line_buffering=line_buffered)
        for fd, original in saved.items():
            os.dup2(original, fd)  # our end of the pipe closes
            os.close(original)  # only ever used here, never by the copier
        # the output is complete before the results (a child still writing keeps the copier)
        _wait_for(copier, timeout=5)


def _wait_for(process: subprocess.Popen[bytes], timeout: float) -> None:
    """Wait for ``process`` to end, at most ``timeout`` seconds, told the moment it ends (a
    pidfd, Linux 5.3+): ``Popen.wait``'s polling naps made every cell wait up to 30 ms
    more. Elsewhere ``Popen.wait``."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # not Linux, an old kernel, or reaped already
        pidfd = None
    if pidfd is not None:
        try:  # poll, not select: a cell may have left a thousand files open
            ended = select.poll()
            ended.register(pidfd, select.POLLIN)
            ended.poll(timeout * 1000)
        finally:
            os.close(pidfd)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=0 if pidfd is not None else timeout)


def _reconfigure(stream: Any, **options: bool) -> None:
    """A replaced ``sys.stdout`` (a test's capture) may not be reconfigurable: left as is."""
    with contextlib.suppress(AttributeError, ValueError, OSError):
        stream.reconfigure(**options)


class ShippedModuleMissing(ImportError):
    """The job cannot import a module the cell's state needs: said in one line."""


def _rebuild_namespace(payload: Payload, folder: Path | None = None) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__,
                                 "display": live_display.display}
    try:
        namespace.update(unpack(payload, folder))
    except ImportError as error:
        missing = error.name or str(error)
        raise ShippedModuleMissing(
            f"the job's Python {sys.executable} on {os.uname().nodename} cannot import "
            f"{missing!r}, which the cell's state needs ({error}): install it in the "
            "environment the job runs, or load its module in the kernel", name=error.name
        ) from None
    namespace.update(getattr(payload, "parameters", {}))  # a sweep task's own values
    return namespace


def rebuild_for_worker(namespace: dict[str, Any], folder: str) -> None:
    """In a spawned worker: the shipped names and the cell's definitions, not its actions."""
    payload: Payload = load_own(Path(folder) / WORKER_PAYLOAD)
    shipped = _rebuild_namespace(payload, Path(folder))
    shipped.pop("__name__", None)  # "__mp_main__" here: the cell's actions stay undone
    namespace.update(shipped)
    definitions = guard_actions(payload.code, set(namespace))
    exec(compile(definitions, CELL_FILENAME, "exec"), namespace)  # the cell's own code


def _save_figures(folder: Path) -> tuple[str, ...]:
    """Save every open matplotlib figure not displayed yet as PNG (if the cell used pyplot)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return ()
    saved = []
    target = folder / FIGURES_DIR
    for number in pyplot.get_fignums():
        if number in live_display.shown_figures:
            continue  # displayed in the cell as the cell ran
        target.mkdir(exist_ok=True)
        path = target / f"figure-{number}.png"
        pyplot.figure(number).savefig(path, dpi=100, bbox_inches="tight")
        saved.append(str(path.relative_to(folder)))
    pyplot.close("all")
    return tuple(saved)


def _cell_frames(error: BaseException) -> types.TracebackType | None:
    """The traceback from the cell's own frames on: the runner's frames are noise."""
    trace = error.__traceback__
    while trace is not None and trace.tb_frame.f_code.co_filename != CELL_FILENAME:
        trace = trace.tb_next
    return trace or error.__traceback__


def execute(payload: Payload, namespace: dict[str, Any]) -> tuple[bool, Any]:
    """Run the code in ``namespace``; return (has_last_value, last_value)."""
    # tracebacks show the cell's lines, as they do in the notebook
    linecache.cache[CELL_FILENAME] = (len(payload.code), None,
                                      payload.code.splitlines(True), CELL_FILENAME)
    module = ast.parse(payload.code, filename=CELL_FILENAME)
    last = module.body[-1] if module.body and payload.capture_last_expression else None
    if isinstance(last, ast.Expr):
        module.body.pop()
    exec(compile(module, CELL_FILENAME, "exec"), namespace)
    if not isinstance(last, ast.Expr):
        return False, None
    return True, eval(compile(ast.Expression(last.value), CELL_FILENAME, "eval"), namespace)


def _changed_in_place(before: dict[str, tuple[Any, Any]], namespace: dict[str, Any],
                      assigned: tuple[str, ...]) -> tuple[tuple[str, ...], dict[str, Any]]:
    """Shipped names still bound to the shipped object whose state changed, and the
    unchanged shipped objects (name → object) results may refer to."""
    changed: list[str] = []
    unchanged: dict[str, Any] = {}
    for name, (original, shipped_hash) in before.items():
        if namespace.get(name) is not original:
            continue  # rebound or deleted: an assigned name comes back as any other
        state_hash = fingerprint(original)
        if state_hash is not None and state_hash == shipped_hash:
            unchanged[name] = original
        elif name not in assigned:
            changed.append(name)
    return tuple(changed), unchanged


def _pickle_results(values: dict[str, Any], last: Any, unchanged: dict[str, Any]
                    ) -> tuple[bytes, tuple[str, ...], Any, dict[str, str]]:
    """One pickle for all; a value that does not pickle is left out with the reason."""
    with contextlib.suppress(Exception):
        return (*dump_results(values, last, unchanged), last, {})
    skipped: dict[str, str] = {}
    for name in list(values):  # find the culprits
        if (error := pickling_error(values[name])) is not None:
            value = values.pop(name)
            skipped[name] = f"{type(value).__name__} does not pickle ({error})".splitlines()[0]
    if last is not None and pickling_error(last) is not None:
        last = None
    try:
        state, referenced = dump_results(values, last, unchanged)
    except Exception as error:  # each pickles alone, not together: say so rather than crash
        skipped.update((name, f"the results do not pickle together ({error})".splitlines()[0])
                       for name in values)
        values.clear()
        last = None
        state, referenced = dump_results({}, None, {})
    return state, referenced, last, skipped


def _said_already(failure: BaseException) -> None:
    """The log has the cell's own traceback now; raised on through submitit, the
    interpreter would print it again at exit through the engine's frames (runpy, submitit,
    this runner): not for this exception. The job still exits 1; any other error prints."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException,
             trace: types.TracebackType | None) -> None:
        if value is not failure:
            previous(kind, value, trace)

    sys.excepthook = hook


class StoppedBySlurm(BaseException):
    """Slurm's SIGTERM (the time limit, a cancel) stopped the cell; its output is kept."""


def _stop_the_cell(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the figures still need saving
    raise StoppedBySlurm(f"signal {signum} from Slurm")


def run_cell(payload: Payload, folder: str, options: ScaleOptions | None = None) -> dict[str, Any]:
    """Entry point the job calls (through submitit). Raises again if the cell raised."""
    started = time.time()
    job_folder = Path(folder)
    # plt.show() shows the figures in the cell; a user's own backend stays, not the
    # kernel's inline one (inherited with the kernel's environment, it needs the kernel)
    if "matplotlib_inline" in os.environ.get("MPLBACKEND", "matplotlib_inline"):
        os.environ["MPLBACKEND"] = live_display.FIGURE_BACKEND
    hostname = os.uname().nodename
    # every task of the job runs the cell; task 0's output and results come back, the
    # others only log (and write their --gather names)
    task = NodeTask(job_folder, options)
    lead_task = task.lead
    if not task.options.checkpoint:  # a checkpointing cell has its own
        signal.signal(signal.SIGTERM, _stop_the_cell)  # submitit's would ignore it
    output, stream = ((job_folder / OUTPUT_FILE, job_folder / STREAM_FILE) if lead_task
                      else (Path(os.devnull), Path(os.devnull)))
    with _tee_output(output, stream):
        failure: BaseException | None = None
        frames: types.TracebackType | None = None
        try:
            main = cell_module(payload, job_folder)  # spawned workers find the cell's functions
            namespace = main.__dict__
            namespace.update(_rebuild_namespace(payload, job_folder))
            task.prepare(namespace)
            # name → (shipped object, hash of its state): kept alive, so no id is reused
            shipped = {n: (namespace[n], fingerprint(namespace[n])) for n in payload.data_names
                       if n in namespace and lead_task}
            task.cell_running = True
            with as_main(main):
                has_last, last_value = execute(payload, namespace)
            task.cell_running = False
            changed, unchanged = _changed_in_place(shipped, namespace, payload.result_names)
            back = {n: namespace[n] for n in (*payload.result_names, *changed) if n in namespace}
            if has_last:
                back["_"] = last_value
            moved, unchanged = come_back_together(back, unchanged)  # unchanged: not said so
        except Requeued:
            failure = Requeued()
        except BaseException as error:  # the user's error, reported on fetch
            failure = error
            frames = None if isinstance(error, ShippedModuleMissing) else _cell_frames(error)
            remote = "" if frames is None else "".join(
                traceback.format_exception(type(error), error, frames))
        task.cell_finished()  # from here a SIGTERM waits until the results are whole
        figures = _save_figures(job_folder) if lead_task else ()
    try:
        if isinstance(failure, Requeued):  # the next segment carries on: no results, no error
            raise SystemExit(0)
        if failure is not None:
            # into the job's log, not into the cell's output
            sys.stderr.write(remote or f"{type(failure).__name__}: {failure}\n")
            _said_already(failure)
            # stopped by Slurm: its state says why; a result file would claim a failure
            if not lead_task or isinstance(failure, StoppedBySlurm):
                raise failure
            if frames is not None and frames.tb_frame.f_code.co_filename == CELL_FILENAME:
                keep_frames(failure, frames, job_folder)  # for %debug, before the results
            result = CellResult(figures=figures, error_type=type(failure).__name__,
                                error_message=str(failure), remote_traceback=remote,
                                hostname=hostname)
            write_results(job_folder, result, attempt_id(), time.time() - started)
            raise failure
        task.write_gathered(namespace)
        if not lead_task:
            return {"names": [], "figures": []}
        picked = {n: namespace[n] for n in (*payload.result_names, *changed, *moved)
                  if n in namespace}
        modules = {n: v.__name__ for n, v in picked.items() if isinstance(v, types.ModuleType)}
        values = {n: v for n, v in picked.items() if n not in modules}
        last_repr = repr(last_value)[:10000] if has_last and last_value is not None else None
        state, referenced, last_value, skipped = _pickle_results(
            values, last_value if has_last else None, unchanged)
        result = CellResult(state=state, names=tuple(values), changed_in_place=changed,
                            came_back_with=moved,
                            referenced=referenced, notebook_ids=dict(payload.notebook_ids),
                            modules=modules, has_last_value=last_value is not None,
                            last_value_repr=last_repr, skipped=skipped, figures=figures,
                            hostname=hostname,
                            shown={name: reprlib.repr(value) for name, value in values.items()}
                            if payload.parameters else {})  # a sweep task's, for its table
        write_results(job_folder, result, attempt_id(), time.time() - started)
        return {"names": sorted(values) + sorted(modules), "figures": list(figures)}
    finally:
        task.results_written()  # a SIGTERM that came meanwhile ends the job now


def run_task(folder: str, index: int, parameters: dict[str, Any]) -> dict[str, Any]:
    """Entry point of a sweep task (through submitit): the cell with this task's parameters.
    The shipped state is in the job folder once (``payload.pkl``); the task writes the usual
    files into ``tasks/NNNNN/``. Raises again if the cell raised."""
    job_folder = Path(folder)
    payload: Payload = load_own(job_folder / PAYLOAD_FILE)
    target = task_dir(job_folder, index)
    target.mkdir(parents=True, exist_ok=True, mode=0o700)
    if os.environ.get("SLURM_PROCID", "0") == "0":
        # a retried task starts clean: no result of the failed attempt stays
        for stale in (OUTCOME_FILE, RESULTS_FILE, OUTPUT_FILE, STREAM_FILE):
            (target / stale).unlink(missing_ok=True)
    return run_cell(replace(payload, parameters=parameters), str(target))
