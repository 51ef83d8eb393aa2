"""Bringing a finished job's results into the notebook: the result file awaited (a network
file system shows it late), names the cell left unchanged resolved to the notebook's own
objects, every rank's ``--gather`` values, figures shown and what came back said.

``JobHandle.fetch`` (``handle.py``) runs the flow; this holds its parts that need only the
job folder and the notebook, not the scheduler.
"""

from __future__ import annotations

import base64
import contextlib
import os
import pickle
import sys
import time
from collections.abc import Callable, Collection, Mapping, MutableMapping
from pathlib import Path
from typing import Any

from .core.errors import HpcMagicsError
from .jobfolder.files import OUTPUT_FILE, CellResult, load_gathered
from .jobfolder.folder import JobFolder, check_owned
from .jobfolder.live_stream import STREAM_FILE, StreamReader, StreamText
from .shipping.buffers import BUFFERS_DIR, same_bytes
from .shipping.stream import fingerprint

# A network file system can show a finished job's result file seconds late.
RESULTS_GRACE_S = 30.0


def await_results(job_id: str, folder: JobFolder, show: bool,
                  grace_s: float = RESULTS_GRACE_S) -> bool:
    """Slurm says COMPLETED but no result file yet in ``folder``: a
    network file system may show it late. Wait (bounded), saying so; False when it never
    appears."""
    show = show and grace_s >= RESULTS_GRACE_S
    if show:
        print(f"[hpc_magics] job {job_id} COMPLETED; waiting up to "
              f"{grace_s:.0f}s for its results to appear in {folder.path} "
              "(network file systems can show files late)")
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):  # listing makes NFS revalidate its cached entries
            os.listdir(folder.path)
        if folder.has_results():
            return True
        time.sleep(min(0.5, max(0.05, deadline - time.monotonic())))
    if show:
        print(f"[hpc_magics] job {job_id}: no results after {grace_s:.0f}s")
    return False


def changed_meanwhile(result: CellResult, namespace: Mapping[str, Any] | None,
                      shipped: Mapping[str, str], folder: Path) -> frozenset[str]:
    """Shipped names the results bring back or refer to whose object the notebook still
    holds but changed in place while the job ran: its fingerprint is no longer the one
    taken when it was shipped (``shipped``: name → hex, from the job's meta.json), or one
    of its big buffers (hashed by size only then) is no file of those the job was sent."""
    if namespace is None:
        namespace = shell_namespace()
    found = set()
    for name in {*result.referenced, *result.changed_in_place, *result.came_back_with} \
            & set(shipped):
        if namespace is None or name not in namespace or \
                id(namespace[name]) != result.notebook_ids.get(name):
            continue  # gone or rebound: the resolver says so
        big: list[pickle.PickleBuffer] = []
        mark = fingerprint(namespace[name], apart=big)
        if mark is None or mark.hex() != shipped[name] or not _as_sent(big, folder):
            found.add(name)
    return frozenset(found)


def _as_sent(big: list[pickle.PickleBuffer], folder: Path) -> bool:
    """Each buffer has the very bytes of a buffer file the submission wrote (of its size;
    a changed array matches none). Without numpy to compare with, nothing is claimed."""
    if big and "numpy" not in sys.modules:
        return True
    files = list((folder / BUFFERS_DIR).glob("*.bin"))
    for buffer in big:
        with buffer.raw() as view:
            if not any(same_bytes(view, path) for path in files):
                return False
    return True


def kept_in_notebook(job_id: str, result: CellResult, values: Mapping[str, Any],
                     meanwhile: Collection[str], notes: list[str]) -> dict[str, Any]:
    """The values to put in the notebook: a name that comes back by value (changed in place
    by the job, or holding what comes back) that the notebook changed meanwhile keeps the
    notebook's object (said, with where the job's value is)."""
    kept = [name for name in (*result.changed_in_place, *result.came_back_with)
            if name in meanwhile and name in values]
    for name in kept:
        how = (", and by the job" if name in result.changed_in_place
               else " (the job left it unchanged)")
        notes.append(f"{name} was changed in the notebook while job {job_id} ran{how}: the "
                     f"notebook's {name} is kept; the job's is "
                     f"hpc_magics.job({job_id!r}).fetch(show=False)[{name!r}]")
    return {name: value for name, value in values.items() if name not in kept}


def resolver(job_id: str, result: CellResult, namespace: MutableMapping[str, Any] | None,
             notes: list[str], meanwhile: Collection[str] = ()) -> Callable[[str], Any]:
    """Results refer to shipped objects the cell left unchanged by name (their bytes do
    not travel back): the notebook's own object is the value, as it was shipped."""
    if namespace is None:
        namespace = shell_namespace()

    said: set[str] = set()

    def resolve(name: str) -> Any:
        if namespace is None or name not in namespace:
            raise HpcMagicsError(
                f"the results of job {job_id} refer to the notebook's {name!r} (the "
                "cell left it unchanged, so it was not sent back), but the notebook has "
                f"no {name!r} now: define it again as it was shipped, then fetch again")
        value = namespace[name]
        if id(value) != result.notebook_ids.get(name):
            notes.append(f"the results refer to {name!r} as the notebook holds it now, "
                         "not the object shipped (rebound since, or a restarted kernel)")
        elif name in meanwhile and name not in said:
            said.add(name)
            notes.append(f"{name} was changed in the notebook while job {job_id} ran: the "
                         f"results refer to the notebook's {name} as it is now, not as the "
                         "job saw it (the job left it unchanged, so sent none back: run the "
                         "cell again for results from it as it is now)")
        return value

    return resolve


def gathered(folder: Path, meta: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    """``--gather`` names: every rank's value, as a list indexed by rank."""
    names = tuple((meta.get("scale") or {}).get("gather") or ())
    if not names:
        return {}
    values, ranks = load_gathered(folder, names)
    size = len(next(iter(values.values()), []))
    if ranks < size:
        notes.append(f"only {ranks} of {size} ranks sent their {', '.join(names)} "
                     "(the others are None): see the log of each rank")
    return values


def say_what_came_back(job_id: str, result: CellResult, values: Mapping[str, Any],
                       notes: list[str]) -> None:
    """Print what did not come back, the notes, and which names are now in the notebook."""
    for name, why in result.skipped.items():
        print(f"[hpc_magics] {name} did not come back: {why}")
    for note in notes:
        print(f"[hpc_magics] {note}")
    if values:
        changed = [n for n in result.changed_in_place if n in values]
        along = [n for n in result.came_back_with if n in values]
        assigned = sorted(n for n in values if n not in changed and n not in along)
        said = [f"{', '.join(assigned)} {'is' if len(assigned) == 1 else 'are'} now "
                "in the notebook"] if assigned else []
        if changed:
            said.append(f"{', '.join(changed)} came back changed in place")
        if along:  # by value though unchanged, so that they still share objects with it
            said.append(f"{', '.join(along)} came back unchanged, sharing objects with what "
                        "came back")
        print(f"[hpc_magics] job {job_id}: {'; '.join(said)}")


def figure_outputs(folder: Path, figures: tuple[str, ...]) -> list[dict[str, Any]]:
    """The job's figure files (paths relative to its folder) as nbformat outputs, each file
    checked as the user's own."""
    shown = []
    for relative in figures:
        path = folder / relative
        if path.exists():
            check_owned(path)
            shown.append({"output_type": "display_data", "metadata": {}, "data": {
                "image/png": base64.b64encode(path.read_bytes()).decode(),
                "text/plain": f"<Figure {relative}>"}})
    return shown


def written_output(folder: JobFolder) -> list[dict[str, Any]]:
    """The cell's output as nbformat outputs, as the live view renders it."""
    text = StreamText(whole=str(folder.path / OUTPUT_FILE))
    for name, piece in StreamReader(folder.path / STREAM_FILE).read_all():
        text.add(name, piece)
    return text.outputs()


def cell_outputs(folder: JobFolder, job_id: str, state: str) -> list[dict[str, Any]]:
    """What the cell shows once its job ``job_id`` ended ``state``, as nbformat outputs, as a
    fetch shows it: the output, the figures, then the error or the last value (its text:
    nothing is unpickled but the result file's own record). For the server, which writes
    them into a notebook nobody has open (``server/notebook_outputs.py``)."""
    shown = written_output(folder)
    if not folder.has_results():
        return [*shown, {"output_type": "stream", "name": "stderr", "text": (
            f"[hpc_magics] job {job_id} ended {state} before the cell finished: no results "
            f"(its log is in {folder.path})\n")}]
    result = folder.load_results()
    shown += figure_outputs(folder.path, result.figures)
    if result.error_type is not None:
        shown.append({"output_type": "error", "ename": result.error_type,
                      "evalue": result.error_message or "",
                      "traceback": (result.remote_traceback or "").rstrip().splitlines()})
    elif result.last_value_repr is not None:
        shown.append({"output_type": "execute_result", "execution_count": None,
                      "metadata": {}, "data": {"text/plain": result.last_value_repr}})
    return shown


def show_outputs(outputs: list[dict[str, Any]]) -> None:
    """nbformat outputs shown as a local cell shows them: stdout to stdout, stderr to
    stderr, a display (the node's, a figure) displayed as made (its mime bundle as it is),
    in order."""
    from IPython.display import display

    for entry in outputs:
        if entry["output_type"] == "display_data":
            display(entry["data"], raw=True, metadata=entry["metadata"])
            continue
        stream = sys.stderr if entry["name"] == "stderr" else sys.stdout
        stream.write(entry["text"] if entry["text"].endswith("\n") else entry["text"] + "\n")
        stream.flush()  # the two streams stay in order in the cell


def shell_namespace() -> MutableMapping[str, Any] | None:
    """The notebook's namespace (IPython's ``user_ns``), or None outside IPython."""
    from IPython import get_ipython

    shell = get_ipython()
    return shell.user_ns if shell is not None else None
