"""The cell's output, shown once: by the live view in the cell while the job ran
(``widgets/live_output.py``), else printed by the fetch, rendered the same way.
"""

from __future__ import annotations

import sys
from typing import Any

from .jobfolder.files import OUTPUT_FILE
from .jobfolder.folder import JobFolder
from .jobfolder.live_stream import STREAM_FILE, StreamReader, StreamText


def rendered_output(folder: JobFolder) -> list[dict[str, str]]:
    """The job's output entries as the live view shows them (``[]`` before any)."""
    text = StreamText(whole=str(folder.path / OUTPUT_FILE))
    for name, piece in StreamReader(folder.path / STREAM_FILE).read_all():
        text.add(name, piece)
    return text.outputs()


def show_output(folder: JobFolder, live: Any = None) -> None:
    """The output into the cell: the live view takes the rest of it, or it is printed
    (stdout to stdout, stderr to stderr, in order); a job folder from before the live
    stream prints its ``output.txt``."""
    if live is not None:
        live.finish()
        return
    if not (folder.path / STREAM_FILE).exists():
        output = folder.shown_output()
        if output:
            print(output, end="" if output.endswith("\n") else "\n")
        return
    for entry in rendered_output(folder):
        stream = sys.stderr if entry["name"] == "stderr" else sys.stdout
        stream.write(entry["text"] if entry["text"].endswith("\n") else entry["text"] + "\n")
        stream.flush()  # the two streams stay in order in the cell
