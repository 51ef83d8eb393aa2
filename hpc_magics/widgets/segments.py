"""The job widget's "segment k of ≤N" for a checkpointed job, from the job folder's
``segment.json`` (written by rank 0 as each segment starts): no scheduler call."""

from __future__ import annotations

import html
import json
from pathlib import Path

from ..jobfolder.files import SEGMENT_FILE


def segment_note(folder: Path) -> str:
    """``segment 2 of ≤4`` once a checkpointed job has started, else ``""``."""
    try:
        data = json.loads((folder / SEGMENT_FILE).read_text())
        return f"segment {int(data['segment'])} of ≤{int(data['of_at_most'])}"
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def segment_html(folder: Path) -> str:
    note = segment_note(folder)
    return f" <small>· {html.escape(note)}</small>" if note else ""
