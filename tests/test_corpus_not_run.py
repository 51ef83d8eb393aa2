"""Corpus cases whose third-party files a clone lacks are not run, and the summary says how
many (tests/conftest.py): they once skipped on every clone and still counted as green."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def test_absent_corpus_files_are_counted_as_not_run_never_as_skipped() -> None:
    """The job scripts' originals: each one here runs, each one absent is counted (seed
    guides' scripts come from ../shared, which a clone under /tmp lacks)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests/test_jobscript_corpus.py"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    last = said.strip().splitlines()[-1]
    assert "skipped" not in last, said
    deselected = re.search(r"(\d+) deselected", last)
    not_run = re.search(r"corpus: (\d+) cases not run: files absent, run "
                        r"scripts/corpus-from-mirrors", said)
    assert (deselected and deselected.group(1)) == (not_run and not_run.group(1)), said
