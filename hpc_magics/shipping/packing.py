"""Decide how each free name travels: modules by name, everything else by value in ONE
pickle (``stream``). What only makes sense in this process (open files, locks, generators,
sockets) is refused with a message naming it, before anything is submitted.
"""

from __future__ import annotations

import builtins
import io
import pickle
import socket
import threading
import types
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ShippingError
from .analysis import CellNames
from .sharing import companions
from .stream import dump_names, fingerprint, pickling_error

DEFAULT_MAX_SHIPPED_MB = 1024

# Names IPython puts in the user namespace that a job must never receive.
_SHELL_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit", "_", "__", "___",
                          "_i", "_ii", "_iii", "_oh", "_ih", "_dh"})
_LOCK_TYPES: tuple[type, ...] = (type(threading.Lock()), type(threading.RLock()),
                                 threading.Condition, threading.Event, threading.Semaphore)
# what only makes sense in this process, and why (``{kind}``: the value's type)
_REFUSALS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (io.IOBase, "an open file ({kind}) belongs to this kernel: open it inside the cell"),
    (_LOCK_TYPES, "a {kind} only synchronises threads of this kernel: create it inside the cell"),
    ((types.GeneratorType, types.AsyncGeneratorType, types.CoroutineType),
     "a {kind} cannot be copied mid-iteration: build it inside the cell, or turn it into a "
     "list first"),
    (socket.socket, "a socket is a live connection of this kernel: open it inside the cell"),
)


@dataclass(frozen=True)
class ShippedName:
    name: str
    how: str  # "module", "function", "class", "data"
    type_name: str
    size: int  # bytes on the wire
    module: str | None = None
    shares_with: str | None = None  # not read by the cell: shares objects with that name


@dataclass(frozen=True)
class Payload:
    """What travels to the job: module names, and the values in one pickle (``state``,
    read back name by name in the order of ``state_names``)."""

    code: str
    modules: Mapping[str, str] = field(default_factory=dict)
    state: bytes = field(default=b"", repr=False)
    state_names: tuple[str, ...] = ()
    manifest: tuple[ShippedName, ...] = ()
    # id() of each shipped value in the kernel: on fetch, a reference to an unchanged shipped
    # object resolves to the notebook's name only while it still holds that very object
    notebook_ids: Mapping[str, int] = field(default_factory=dict)
    # each shipped data value's ``stream.fingerprint`` (hex) as shipped: on fetch, a change
    # made to that object in the notebook while the job ran is noticed, not papered over
    fingerprints: Mapping[str, str] = field(default_factory=dict)
    result_names: tuple[str, ...] = ()
    capture_last_expression: bool = False
    # big arrays beside the pickle: the buffers themselves in the kernel; once submitted,
    # the files in the job folder that hold them (``buffers.write_buffers``)
    buffers: tuple[Any, ...] = field(default=(), repr=False, compare=False)
    buffer_files: tuple[str, ...] = ()
    out_of_band_bytes: int = 0
    # a sweep task's parameters (name → value), set as variables before the cell runs
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return len(self.state) + self.out_of_band_bytes

    @property
    def data_names(self) -> tuple[str, ...]:
        """Shipped data (not functions, classes or modules): what may change in place."""
        return tuple(item.name for item in self.manifest if item.how == "data")

    def summary(self) -> str:
        """One line: what is shipped and how big it is."""
        if not self.manifest:
            return "shipping nothing: the cell uses no notebook state"
        parts = []
        for item in self.manifest:
            if item.how == "module":
                parts.append(f"{item.name} (module {item.module})")
            else:
                kind = item.type_name if item.how == "data" else item.how
                shares = f", shares objects with {item.shares_with}" if item.shares_with else ""
                parts.append(f"{item.name} ({kind}, {human_size(item.size)}{shares})")
        return f"shipping {human_size(self.size)}: " + ", ".join(parts)


def human_size(size: float) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"  # pragma: no cover


def _refusal(value: Any) -> str | None:
    """Why this value cannot run elsewhere, or None."""
    return next((why.format(kind=type(value).__name__) for kinds, why in _REFUSALS
                 if isinstance(value, kinds)), None)


def pack(code: str, names: CellNames, namespace: Mapping[str, Any],
         max_shipped_mb: float = DEFAULT_MAX_SHIPPED_MB) -> Payload:
    """Build the payload for ``code``; raise ``ShippingError`` naming the first bad name."""
    modules: dict[str, str] = {}
    values: dict[str, Any] = {}
    for name in names.free:
        if name in _SHELL_NAMES or (name.startswith("_i") and name[2:].isdigit()):
            continue
        if name not in namespace:
            continue  # a builtin, or a NameError the job will report like Python would
        value = namespace[name]
        if value is getattr(builtins, name, object()):  # a builtin: the job has it
            continue
        if isinstance(value, types.ModuleType):
            if value.__name__ == "__main__":
                raise ShippingError(f"name {name!r} is the notebook's own module: "
                                    "it cannot be shipped; use the names it holds")
            modules[name] = value.__name__
            continue
        if reason := _refusal(value):
            raise ShippingError(f"cannot ship {name!r}: {reason} (or run the notebook in a "
                                "Slurm kernel, where nothing is shipped)")
        values[name] = value
    read = tuple(values)
    extra, groups = _sharing_names(values, namespace)
    values.update(extra)
    sizes: dict[str, int] = {}

    def check_size(name: str, size: int) -> None:
        sizes[name] = size
        if size > max_shipped_mb * 1e6:
            raise ShippingError(
                f"{name!r} is {human_size(size)}, over the {max_shipped_mb:g} MB limit for "
                "shipped state: save it to a file the job loads (np.save, to_parquet), or raise "
                "the limit with c.HpcMagicsKernel.max_shipped_mb")

    buffers: list[pickle.PickleBuffer] = []  # big arrays, kept apart from the pickle
    try:
        # one pickler for all names: what two names share is written once and stays shared
        state = dump_names(values.items(), on_size=check_size, out_of_band=buffers)
    except ShippingError:
        raise
    except Exception as error:
        name = next(name for name in values if name not in sizes)  # sized once pickled
        first_line = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ShippingError(
            f"cannot ship {name!r} ({type(values[name]).__name__}): {first_line}; create it "
            "inside the cell, or run the notebook in a Slurm kernel, where nothing is shipped"
        ) from None
    apart = sum(buffer.raw().nbytes for buffer in buffers)
    if len(state) + apart > max_shipped_mb * 1e6:
        raise ShippingError(
            f"the cell's state is {human_size(len(state) + apart)} in all, over the "
            f"{max_shipped_mb:g} MB limit: save the big arrays to files the job loads, "
            "or raise c.HpcMagicsKernel.max_shipped_mb")
    manifest = []
    for name in names.free:  # the order the cell reads them in
        if name in modules:
            manifest.append(ShippedName(name, "module", "module", 0, modules[name]))
        elif name in values:
            value = values[name]
            how = ("function" if isinstance(value, (types.FunctionType,
                                                    types.BuiltinFunctionType))
                   else "class" if isinstance(value, type) else "data")
            manifest.append(ShippedName(name, how, type(value).__name__, sizes[name]))
    for name in extra:
        partner = next((m for g in groups if name in g for m in g if m in read), None)
        manifest.append(ShippedName(name, "data", type(extra[name]).__name__, sizes[name],
                                    shares_with=partner))
    # each data name hashed, big buffers apart (the job folder keeps those): a fetch notices
    # a change made in the notebook meanwhile (never compared with the node's hashes)
    marks = {item.name: fingerprint(values[item.name], apart=[])
             for item in manifest if item.how == "data"}
    return Payload(code=code, modules=modules, state=state, state_names=tuple(values),
                   manifest=tuple(manifest),
                   notebook_ids={name: id(value) for name, value in values.items()},
                   fingerprints={name: mark.hex() for name, mark in marks.items() if mark},
                   result_names=names.assigned,
                   capture_last_expression=names.has_final_expression,
                   buffers=tuple(buffers), out_of_band_bytes=apart)


def _sharing_names(values: Mapping[str, Any], namespace: Mapping[str, Any]
                   ) -> tuple[dict[str, Any], tuple[tuple[str, ...], ...]]:
    """Notebook names the cell does not read that share objects with what it ships (they
    travel too, so every name sees one object after the cell: ``sharing.py``)."""
    def eligible(name: str, value: Any) -> bool:
        return not (name.startswith("_") or name in _SHELL_NAMES
                    or isinstance(value, (types.ModuleType, type, types.FunctionType))
                    or _refusal(value) is not None)

    extra, groups = companions(values, namespace, eligible)
    # one that does not pickle stays behind (its name keeps the notebook's object)
    dropped = {name for name, value in extra.items() if pickling_error(value) is not None}
    extra = {name: value for name, value in extra.items() if name not in dropped}
    groups = tuple(kept for g in groups if len(kept := tuple(n for n in g if n not in dropped))
                   > 1)
    return extra, groups


def check_defined(code: str, names: CellNames, namespace: Mapping[str, Any],
                  provided: Collection[str] = ()) -> None:
    """Refuse a cell that reads a name neither the notebook, Python nor the cell itself
    defines anywhere: on the node it could only stop with a NameError, after a wait in the
    queue. (A name the cell binds somewhere, even in a loop that may not run, passes.)"""
    # a star import, exec or globals() bind names nobody can list beforehand; a cell that
    # catches NameError means to read names that may not exist
    if any(marker in code for marker in ("import *", "exec(", "globals()", "NameError")):
        return
    missing = [name for name in names.free
               if name not in namespace and name not in names.assigned and name not in provided
               and not hasattr(builtins, name) and name not in _SHELL_NAMES
               and not name.startswith("__") and not name.lstrip("_i").isdigit()]
    if missing:
        listed = ", ".join(repr(name) for name in missing)
        raise ShippingError(
            f"the cell reads {listed}, which the notebook has not defined: run the cell that "
            "defines it first, or define it in this cell")

