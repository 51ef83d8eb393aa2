"""One pickle for many names, both ways, so identity and shared references survive.

Names are dumped one after another by ONE pickler on one stream (its memo shared: an object
two names hold is written once) and loaded by one unpickler. Results coming back refer to
shipped objects the cell left unchanged by name (``persistent_id``): the notebook's own
object, whose bytes never travel back. Standard library and cloudpickle only.
"""

from __future__ import annotations

import hashlib
import io
import pickle
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import cloudpickle

PROTOCOL = pickle.HIGHEST_PROTOCOL  # 5 or more: out-of-band buffers
# Buffers this big go beside the pickle (raw files the job maps back), not through it.
OUT_OF_BAND_MIN_BYTES = 1 << 20
_SHIPPED = "hpc_magics.shipped"  # tag of a reference to a shipped name


def dump_names(values: Iterable[tuple[str, Any]], on_size: Callable[[str, int], None],
               out_of_band: list[pickle.PickleBuffer]) -> bytes:
    """Pickle the values in order into one stream; ``on_size(name, bytes)`` after each, so a
    caller can refuse an over-size name before the rest is pickled.

    Big contiguous buffers (numpy arrays, bytearrays of ``OUT_OF_BAND_MIN_BYTES`` or more)
    are not copied into the pickle: pickle protocol 5 hands them over as ``PickleBuffer``s,
    appended to ``out_of_band`` in order; ``load_names`` needs them back in that order. A
    name's size counts its buffers too."""
    stream = io.BytesIO()
    sizes: list[int] = []  # of the buffers handed over so far
    pickler = cloudpickle.CloudPickler(stream, protocol=PROTOCOL,
                                       buffer_callback=_kept_apart(out_of_band, sizes.append))
    for name, value in values:
        before, handed = stream.tell(), len(sizes)
        pickler.dump(value)
        on_size(name, stream.tell() - before + sum(sizes[handed:]))
    return stream.getvalue()  # BytesIO hands its buffer over without a copy


def _kept_apart(out_of_band: list[pickle.PickleBuffer], counted: Callable[[int], None]
                ) -> Callable[[pickle.PickleBuffer], bool]:
    """A ``buffer_callback`` handing big buffers over (``counted(size)`` each)."""
    def keep_apart(buffer: pickle.PickleBuffer) -> bool:
        with buffer.raw() as view:
            size = view.nbytes
        if size < OUT_OF_BAND_MIN_BYTES:
            return True  # small: in the pickle, as without a callback
        out_of_band.append(buffer)
        counted(size)
        return False

    return keep_apart


def load_names(data: bytes, names: Iterable[str],
               buffers: Iterable[Any] | None = None) -> dict[str, Any]:
    """The inverse of ``dump_names`` (``buffers``: the out-of-band buffers, in order)."""
    unpickler = pickle.Unpickler(io.BytesIO(data), buffers=buffers)
    return {name: unpickler.load() for name in names}


class TooBig(Exception):
    """A pickle grew past the size asked for (``pickling_error``'s ``max_bytes``)."""


class _HashSink:
    """A file-like object that only hashes what is written: no copy of the pickle is kept."""

    def __init__(self, max_bytes: int | None = None) -> None:
        self.digest = hashlib.blake2b(digest_size=16)
        self.size, self.max_bytes = 0, max_bytes

    def write(self, chunk: Any) -> int:
        # big buffers arrive as a PickleBuffer, written without a copy: any buffer will do
        with memoryview(chunk) as view:
            self.size += view.nbytes
            if self.max_bytes is not None and self.size > self.max_bytes:
                raise TooBig(f"its pickle is over {self.max_bytes >> 20} MiB")
            self.digest.update(view)
            return view.nbytes


def pickling_error(value: Any, max_bytes: int | None = None) -> Exception | None:
    """Why the value does not pickle (or pickles to more than ``max_bytes``: ``TooBig``,
    found without pickling the rest), or None; hashes rather than keeps the bytes."""
    try:
        cloudpickle.CloudPickler(_HashSink(max_bytes), protocol=PROTOCOL).dump(value)
    except Exception as error:
        return error
    return None


def fingerprint(value: Any, apart: list[pickle.PickleBuffer] | None = None) -> bytes | None:
    """A hash of the value's standalone pickle, or None if it does not pickle (then it
    counts as changed). With ``apart`` (a list), big buffers are appended to it, only their
    sizes hashed: a caller compares them when it must (hashing costs more than shipping)."""
    sink = _HashSink()
    apart_too = None if apart is None else _kept_apart(
        apart, lambda size: sink.digest.update(size.to_bytes(8, "little")))
    try:
        cloudpickle.CloudPickler(sink, protocol=PROTOCOL, buffer_callback=apart_too).dump(value)
    except Exception:
        return None
    return sink.digest.digest()


class _ResultPickler(cloudpickle.CloudPickler):
    """Writes shipped objects the cell left unchanged as references to their names."""

    def __init__(self, stream: Any, references: Mapping[int, str]) -> None:
        super().__init__(stream, protocol=PROTOCOL)
        self._references = references
        self.referenced: set[str] = set()

    def persistent_id(self, obj: Any) -> Any:
        name = self._references.get(id(obj))
        if name is None:
            return None
        self.referenced.add(name)
        return (_SHIPPED, name)


def dump_results(values: Mapping[str, Any], last: Any,
                 unchanged: Mapping[str, Any]) -> tuple[bytes, tuple[str, ...]]:
    """Pickle ``(values, last)`` as one object; objects in ``unchanged`` (name → the shipped
    object, still alive) go by reference. Returns the pickle and the names referenced."""
    stream = io.BytesIO()
    pickler = _ResultPickler(stream, {id(obj): name for name, obj in unchanged.items()})
    pickler.dump((dict(values), last))
    return stream.getvalue(), tuple(sorted(pickler.referenced))


class _ResultUnpickler(pickle.Unpickler):
    def __init__(self, stream: Any, resolve: Callable[[str], Any]) -> None:
        super().__init__(stream)
        self._resolve = resolve

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 2 and pid[0] == _SHIPPED):
            raise pickle.UnpicklingError(f"unknown reference {pid!r} in a result file")
        return self._resolve(pid[1])


def load_results(data: bytes, resolve: Callable[[str], Any]) -> tuple[dict[str, Any], Any]:
    """The inverse of ``dump_results``: ``resolve(name)`` gives the notebook's object."""
    return _ResultUnpickler(io.BytesIO(data), resolve).load()
