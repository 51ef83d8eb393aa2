"""The cell's live output: what the job writes to stdout and stderr, in order, as records
in ``output.stream`` in the job folder. The kernel reads it while the job runs (with
back-off, never asking Slurm), and the fetch shows the same text afterwards: one door.

A record is a header line ``<kind><length>\\n`` then ``length`` bytes; kind ``o`` is stdout,
``e`` stderr. One process appends (``node/tee.py``, which loads this file by its path: so
standard library only, no package imports). A reader takes whole records only: a record
half written (or half visible through a network file system) waits for the next look.

``StreamText`` renders the records as a notebook shows a local cell's output: consecutive
text of one stream is one output entry, and a carriage return starts its line again, so a
progress bar of 10,000 steps ends as one line, not 10,000.
"""

from __future__ import annotations

import codecs
import os
from collections import deque
from typing import Any

STREAM_FILE = "output.stream"
_KIND_OF = {"stdout": b"o", "stderr": b"e"}
_NAME_OF = {kind: name for name, kind in _KIND_OF.items()}
READ_BYTES = 4 << 20  # at most this much per look: a huge backlog comes in pieces
SHOWN_CHARACTERS = 1_000_000  # a notebook (and the browser) chokes on more output
_HEADER_MAX = 24  # kind + digits + newline, far more than any record's length needs


def record(name: str, data: bytes) -> bytes:
    """One record of stream ``name`` ("stdout" or "stderr")."""
    return _KIND_OF[name] + str(len(data)).encode() + b"\n" + data


class StreamReader:
    """Reads a job's stream file from where it left off: ``(stream name, text)`` pieces,
    decoded per stream (a character split between two records comes out whole)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = path
        self.offset = 0
        self.damaged = False  # a header that is no header: nothing after it is trusted
        self._decoders: dict[str, Any] = {}

    def read_new(self) -> list[tuple[str, str]]:
        if self.damaged:
            return []
        try:  # opened anew each look: a network file system revalidates on open
            with open(self.path, "rb") as stream:
                stream.seek(self.offset)
                data = stream.read(READ_BYTES)
        except OSError:
            return []  # not written yet
        runs: list[tuple[str, list[str]]] = []  # joined once: a 4 MB look has 100k records
        position = 0
        while (newline := data.find(b"\n", position, position + _HEADER_MAX)) >= 0:
            name = _NAME_OF.get(data[position:position + 1])
            length = data[position + 1:newline]
            if name is None or not length.isdigit():
                self.damaged = True
                break
            end = newline + 1 + int(length)
            if end > len(data):
                break  # the rest of this record is not there yet
            decoder = self._decoders.setdefault(
                name, codecs.getincrementaldecoder("utf-8")(errors="replace"))
            if not runs or runs[-1][0] != name:
                runs.append((name, []))
            runs[-1][1].append(decoder.decode(data[newline + 1:end]))
            position = end
        else:  # no header line within reach: incomplete, or damaged if plenty is there
            self.damaged = len(data) - position >= _HEADER_MAX
        self.offset += position
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
    """One output entry: a stream's finished lines (in chunks, so that adding is cheap
    however long the output) and its current line as written so far."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.done: deque[str] = deque()
        self.line = ""


class StreamText:
    """A cell's output entries as a notebook shows them, built piece by piece.

    Consecutive text of one stream is one entry; its current line keeps only what follows
    its last carriage return (as Jupyter renders it), and a carriage return at its very end
    is kept until the next piece says whether a newline follows. Past ``limit`` characters
    the oldest lines are left out, and a first line says where the whole output is."""

    def __init__(self, limit: int = SHOWN_CHARACTERS, whole: str = "output.txt") -> None:
        self.entries: deque[_Entry] = deque()
        self.limit = limit
        self.whole = whole  # where all of it is (the job folder's ``output.txt``)
        self.dropped = 0  # characters left out at the front
        self._size = 0

    def add(self, name: str, text: str) -> None:
        if not self.entries or self.entries[-1].name != name:
            self.entries.append(_Entry(name))
        entry = self.entries[-1]
        self._size -= len(entry.line)
        line = entry.line + text
        while "\r\n" in line:  # "\r\n" and "\r\r\n" end a line like "\n"
            line = line.replace("\r\n", "\n")
        finished, newline, line = line.rpartition("\n")
        if newline:
            done = "".join(_last_segment(each) + "\n" for each in finished.split("\n"))
            entry.done.append(done)
            self._size += len(done)
        kept = line.rstrip("\r")
        entry.line = line[kept.rfind("\r") + 1:]  # what a carriage return has not erased
        self._size += len(entry.line)
        self._trim()

    def _trim(self) -> None:
        while self._size > self.limit and (len(self.entries) > 1 or self.entries[0].done):
            first = self.entries[0]
            if not first.done:  # only its current line left: the entry goes
                cut = len(first.line)
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

    def outputs(self) -> list[dict[str, str]]:
        """The entries as nbformat stream outputs (``{"output_type": "stream", ...}``)."""
        shown = [{"output_type": "stream", "name": entry.name, "text": text}
                 for entry in self.entries
                 if (text := "".join(entry.done) + entry.line.rstrip("\r"))]
        if self.dropped:
            shown.insert(0, {"output_type": "stream", "name": "stdout", "text": (
                f"[hpc_magics] the output is larger than a notebook shows: here are its last "
                f"{self.limit / 1e6:g} MB; all of it is in {self.whole}\n")})
        return shown


def _last_segment(line: str) -> str:
    return line[line.rfind("\r") + 1:]
