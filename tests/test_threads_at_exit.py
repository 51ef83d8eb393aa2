"""Our background threads are stopped before the interpreter finalizes: a daemon thread
still running Python code then can crash the process after its work is done (CI saw a
release's pytest end "5 passed" and then exit 139)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# run as a script: the checker is registered before hpc_magics is imported, so it runs
# after hpc_magics's own hook (atexit runs last-registered first)
SCRIPT = """
import atexit, sys, threading
from pathlib import Path

def still_running():
    names = [t.name for t in threading.enumerate() if t.name.startswith("hpc-magics")]
    print("running at exit:", names, flush=True)

atexit.register(still_running)

from hpc_magics.magics.widget_monitor import Monitor
from hpc_magics.widgets.live_output import LiveOutput

class Widget:  # what the monitor keeps (by weak reference)
    pass

LiveOutput(Path(sys.argv[1]), ended=lambda: False).start()  # a job that never ends
monitor = Monitor()
monitor.tick = lambda widgets: True  # a widget that always needs another round
monitor.add(Widget())
print("started:", sorted(t.name for t in threading.enumerate() if t.name != "MainThread"),
      flush=True)
"""


def test_the_live_output_and_widget_threads_end_before_the_interpreter(tmp_path: Path) -> None:
    stream = tmp_path / "stream"
    stream.write_text("")
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(stream)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "started: ['hpc-magics-live-output', 'hpc-magics-monitor']", lines
    assert lines[-1] == "running at exit: []", lines
