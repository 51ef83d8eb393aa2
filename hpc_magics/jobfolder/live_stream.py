"""The cell's live output: its stdout, stderr and displays, in order, as records in
``output.stream`` in the job folder, read by the kernel while the job runs and by the fetch.

A record is a header line ``<kind><length>\\n`` then ``length`` bytes; kind ``o`` is stdout,
``e`` stderr, ``d`` a display (JSON: ``data``, ``metadata``, ``display_id``, ``update``).
One process appends (``node/tee.py``, which loads this file by its path: standard library
only). A reader takes whole records only. ``StreamText`` renders them as a notebook shows
a local cell's output (a carriage return starts its line again: a progress bar is one line).
"""

from __future__ import annotations

import codecs
import os
from collections import deque

TYPE_CHECKING = False  # not typing's: node/tee.py starts with this module alone, and quickly
if TYPE_CHECKING:
    from typing import Any

STREAM_FILE = "output.stream"
_KIND_OF = {"stdout": b"o", "stderr": b"e", "display": b"d"}
_NAME_OF = {kind: name for name, kind in _KIND_OF.items()}
READ_BYTES = 4 << 20  # at most this much per look: a huge backlog comes in pieces
SHOWN_CHARACTERS = 1_000_000  # a notebook (and the browser) chokes on more output
_HEADER_MAX = 24  # kind + digits + newline, far more than any record's length needs


def record(name: str, data: bytes) -> bytes:
    """One record of stream ``name`` ("stdout" or "stderr")."""
    return _KIND_OF[name] + str(len(data)).encode() + b"\n" + data


def parse_records(data: bytes) -> tuple[list[tuple[str, bytes]], int, bool]:
    """The whole records at the start of ``data``: (kind name, payload) each, how many bytes
    they take, and whether what follows them is damaged (a header that is no header)."""
    records: list[tuple[str, bytes]] = []
    position = 0
    while (newline := data.find(b"\n", position, position + _HEADER_MAX)) >= 0:
        name = _NAME_OF.get(data[position:position + 1])
        length = data[position + 1:newline]
        if name is None or not length.isdigit():
            return records, position, True
        end = newline + 1 + int(length)
        if end > len(data):
            return records, position, False  # the rest of this record is not there yet
        records.append((name, data[newline + 1:end]))
        position = end
    # no header line within reach: incomplete, or damaged if plenty is there
    return records, position, len(data) - position >= _HEADER_MAX


class StreamReader:
    """Reads a job's stream file from where it left off: ``(stream name, text)`` pieces."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path
        self.offset = 0
        self.damaged = False  # a header that is no header: nothing after it is trusted
        self._decoders: dict[str, Any] = {}

    def read_new(self) -> list[tuple[str, str]]:
        """New pieces: runs of one stream's text, and each display's JSON on its own."""
        if self.damaged:
            return []
        try:  # opened anew each look: a network file system revalidates on open
            with open(self.path, "rb") as stream:
                stream.seek(self.offset)
                data = stream.read(READ_BYTES)
        except OSError:
            return []  # not written yet
        records, used, self.damaged = parse_records(data)
        self.offset += used
        runs: list[tuple[str, list[str]]] = []  # joined once: a 4 MB look has 100k records
        for name, payload in records:
            if name == "display":
                runs.append((name, [payload.decode("utf-8", errors="replace")]))
                continue
            decoder = self._decoders.setdefault(
                name, codecs.getincrementaldecoder("utf-8")(errors="replace"))
            if not runs or runs[-1][0] != name:
                runs.append((name, []))
            runs[-1][1].append(decoder.decode(payload))
        return [(name, text) for name, parts in runs if (text := "".join(parts))]

    def read_all(self) -> list[tuple[str, str]]:
        """Everything from here to the end of the file as it is now."""
        pieces: list[tuple[str, str]] = []
        while True:
            before = self.offset
            pieces += self.read_new()
            if self.offset == before:
                return pieces


class _Entry:
    """One output entry: a stream's finished lines (in chunks) and current line; or a display."""

    def __init__(self, name: str, display: dict[str, Any] | None = None, size: int = 0,
                 display_id: str | None = None) -> None:
        self.name = name
        self.done: deque[str] = deque()
        self.line = ""
        self.display = display
        self.display_size = size
        self.display_id = display_id


class StreamText:
    """A cell's output entries as a notebook shows them, built piece by piece: consecutive
    text of one stream is one entry, its current line only what follows its last carriage
    return (one at its very end waits for the next piece). Past ``limit`` characters the
    oldest lines are left out, and a first line says where the whole output is."""

    def __init__(self, limit: int = SHOWN_CHARACTERS, whole: str = "output.txt") -> None:
        self.entries: deque[_Entry] = deque()
        self.limit = limit
        self.whole = whole  # where all of it is (the job folder's ``output.txt``)
        self.dropped = 0  # characters left out at the front
        self._size = 0

    def add(self, name: str, text: str) -> None:
        if name == "display":
            self._add_display(text)
            return
        if not self.entries or self.entries[-1].name != name:
            self.entries.append(_Entry(name))
        entry = self.entries[-1]
        self._size -= len(entry.line)
        line = entry.line + text
        while "\r\n" in line:  # "\r\n" and "\r\r\n" end a line like "\n"
            line = line.replace("\r\n", "\n")
        finished, newline, line = line.rpartition("\n")
        if newline:
            # each line as shown: what its last carriage return left
            done = "".join(each[each.rfind("\r") + 1:] + "\n" for each in finished.split("\n"))
            entry.done.append(done)
            self._size += len(done)
        kept = line.rstrip("\r")
        entry.line = line[kept.rfind("\r") + 1:]  # what a carriage return has not erased
        self._size += len(entry.line)
        self._trim()

    def _add_display(self, text: str) -> None:
        """A display: a new entry; one with a ``display_id`` shown before updates that entry
        too (only that, for an ``update``), as IPython does."""
        import json  # the kernel's reader only: the node's copier never loads it

        try:
            message = json.loads(text)
            shown = {"data": dict(message["data"]), "metadata": dict(message["metadata"])}
        except (ValueError, KeyError, TypeError):
            return  # not a display this version writes: left out
        display_id = message.get("display_id")
        for entry in self.entries:
            if display_id is not None and entry.display_id == display_id:
                self._size += len(text) - entry.display_size
                entry.display, entry.display_size = shown, len(text)
        if not message.get("update"):
            self.entries.append(_Entry("display", shown, len(text), display_id))
            self._size += len(text)
        self._trim()

    def _trim(self) -> None:
        while self._size > self.limit and (len(self.entries) > 1 or self.entries[0].done):
            first = self.entries[0]
            if not first.done:  # only its current line left (or a display): the entry goes
                cut = len(first.line) + first.display_size
                self.entries.popleft()
            elif len(first.done[0]) <= self._size - self.limit:
                cut = len(first.done.popleft())
            else:  # part of a chunk: from the start of a line
                chunk = first.done[0]
                cut = chunk.find("\n", self._size - self.limit - 1) + 1 or len(chunk)
                first.done[0] = chunk[cut:]
                if not first.done[0]:
                    first.done.popleft()
            if not first.done and not first.line and len(self.entries) > 1:
                self.entries.popleft()
            self._size -= cut
            self.dropped += cut

    def outputs(self) -> list[dict[str, Any]]:
        """The entries as nbformat outputs (``stream`` and ``display_data``)."""
        shown: list[dict[str, Any]] = []
        for entry in self.entries:
            if entry.display is not None:
                shown.append({"output_type": "display_data", **entry.display})
            elif text := "".join(entry.done) + entry.line.rstrip("\r"):
                shown.append({"output_type": "stream", "name": entry.name, "text": text})
        if self.dropped:
            shown.insert(0, {"output_type": "stream", "name": "stdout", "text": (
                f"[hpc_magics] the output is larger than a notebook shows: here are its last "
                f"{self.limit / 1e6:g} MB; all of it is in {self.whole}\n")})
        return shown

