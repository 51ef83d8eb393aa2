"""Benchmark: ``%load_ext hpc_magics`` against a bare IPython start, and the memory it adds.

Each repeat is a fresh interpreter (byte code already compiled, as on a second start) that
starts an IPython shell, then loads the extension: the bare start is the baseline, the
extension must add at most 25 ms to it and little memory (resident set size, as ``ps``
shows for a kernel). Nothing heavy may load until used (see tests/magics/test_lazy_imports).

    python benchmarks/bench_load_ext.py [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import Any

from _common import at_most_more, repeat_count

LIMIT_MS = 25.0
LIMIT_MB = 10.0

CHILD = """
import json, time
def rss_mb():
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmRSS")) / 1024
started = time.perf_counter()
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
bare, bare_cpu, bare_rss = time.perf_counter() - started, time.process_time(), rss_mb()
shell.run_line_magic("load_ext", "hpc_magics")
loaded, loaded_cpu, loaded_rss = time.perf_counter() - started, time.process_time(), rss_mb()
assert "sbatch" in shell.magics_manager.magics["cell"]
print(json.dumps({"bare": bare, "loaded": loaded, "bare_cpu": bare_cpu,
                  "loaded_cpu": loaded_cpu, "bare_rss": bare_rss, "loaded_rss": loaded_rss}))
"""


def one_start() -> dict[str, float]:
    # byte code is cached as an installed package's is (a developer's shell may say not to)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          timeout=120, check=True, env=env)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(repeat: int) -> dict[str, float]:
    one_start()  # compiles the byte code once, as any second start finds it
    starts = [one_start() for _ in range(repeat)]
    return {key: statistics.median(s[key] for s in starts) for key in starts[0]}


def rows() -> list[dict[str, Any]]:
    m = measure(repeat_count(7))
    return [
        at_most_more("IPython start + %load_ext hpc_magics vs a bare IPython start (ms)",
                     m["loaded"] * 1000, m["bare"] * 1000, LIMIT_MS, "ms", digits=1),
        at_most_more("resident memory after %load_ext hpc_magics vs a bare IPython shell (MB)",
                     m["loaded_rss"], m["bare_rss"], LIMIT_MB, "MB", digits=1),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    m = measure(args.repeat)
    extra_ms, extra_mb = (m["loaded"] - m["bare"]) * 1000, m["loaded_rss"] - m["bare_rss"]
    print(f"CPU time: bare {m['bare_cpu'] * 1000:.0f} ms, loaded {m['loaded_cpu'] * 1000:.0f} ms")
    print(f"bare IPython start {m['bare'] * 1000:.0f} ms, {m['bare_rss']:.0f} MB; "
          f"%load_ext hpc_magics adds {extra_ms:.1f} ms (limit {LIMIT_MS:g}) "
          f"and {extra_mb:.1f} MB (limit {LIMIT_MB:g})")
    return 0 if extra_ms <= LIMIT_MS and extra_mb <= LIMIT_MB else 1


if __name__ == "__main__":
    sys.exit(main())
