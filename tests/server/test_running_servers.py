"""A Jupyter server's runtime file names its pid; a server killed without removing it leaves
a pid that another process may get later. Such a process is not a running server: only a
process that had started by the time the file was written is. The file's age is set by
hand (``os.utime``) to stand for a server long gone: a real reuse of that pid is what
tests/magics/test_local_pid_reuse.py makes for the local backend."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from hpc_magics.server.client import running_servers


def test_a_pid_newer_than_the_servers_runtime_file_is_no_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    other = subprocess.Popen(["sleep", "120"])
    try:
        runtime_file = tmp_path / f"jpserver-{other.pid}.json"
        runtime_file.write_text(json.dumps({"pid": other.pid, "url": "http://127.0.0.1:9/"}))
        assert [s["pid"] for s in running_servers()] == [other.pid]  # written after it started

        hour_ago = time.time() - 3600
        os.utime(runtime_file, (hour_ago, hour_ago))  # a server that ended an hour ago
        assert running_servers() == []
    finally:
        other.kill()
        other.wait(timeout=30)
