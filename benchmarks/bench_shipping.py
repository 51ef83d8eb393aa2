"""Benchmark: what shipping a cell's state costs, against pickling that state by hand.

The baseline is what a user would do without hpc_magics: ``cloudpickle.dumps`` of the names
the cell needs. We measure ``analyse`` + ``pack`` (free names, refusals, one pickle for all
names with the size report per name) on the same namespace in the same run, as time and peak
memory ratios, and exit non-zero when shipping costs more than 1.5x the baseline in either.

    python benchmarks/bench_shipping.py [--megabytes 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import cloudpickle
import numpy as np

from hpc_magics.shipping.analysis import analyse
from hpc_magics.shipping.packing import pack

LIMIT = 1.5
CELL = """
model = train(weights, inputs, labels, epochs=3)
loss = evaluate(model, inputs, labels)
"""


def train(weights: Any, inputs: Any, labels: Any, epochs: int = 1) -> Any:
    for _ in range(epochs):
        weights = weights - 0.1 * inputs.T @ (inputs @ weights - labels) / len(labels)
    return weights


def evaluate(weights: Any, inputs: Any, labels: Any) -> float:
    return float(np.mean((inputs @ weights - labels) ** 2))


def namespace(megabytes: float) -> dict[str, Any]:
    rows = int(megabytes * 1e6 / 8 / 16)
    rng = np.random.default_rng(0)
    return {"np": np, "train": train, "evaluate": evaluate,
            "inputs": rng.normal(size=(rows, 16)), "labels": rng.normal(size=rows),
            "weights": np.zeros(16), "unused": rng.normal(size=rows)}


def measure(action: Callable[[], Any], repeat: int) -> tuple[float, int]:
    times, peaks = [], []
    for _ in range(repeat):
        gc.collect()
        tracemalloc.start()
        started = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - started)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        del result
    return statistics.median(times), max(peaks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    names = namespace(args.megabytes)
    needed = ("train", "evaluate", "weights", "inputs", "labels")

    def baseline() -> bytes:
        return bytes(cloudpickle.dumps({name: names[name] for name in needed}))

    def shipping() -> Any:
        return pack(CELL, analyse(CELL), names, max_shipped_mb=10_000)

    payload = shipping()
    assert set(payload.state_names) | set(payload.modules) >= set(needed) - {"np"}
    assert "unused" not in payload.state_names  # only what the cell reads travels
    base_time, base_peak = measure(baseline, args.repeat)
    ship_time, ship_peak = measure(shipping, args.repeat)
    time_ratio, memory_ratio = ship_time / base_time, ship_peak / base_peak
    in_notebook = sum(v.nbytes for v in names.values() if isinstance(v, np.ndarray))
    print(f"state: {in_notebook / 1e6:.0f} MB of arrays in the notebook, "
          f"{payload.size / 1e6:.0f} MB shipped")
    print(f"cloudpickle by hand: {base_time:.3f} s, peak {base_peak / 1e6:.0f} MB")
    print(f"hpc_magics pack:     {ship_time:.3f} s, peak {ship_peak / 1e6:.0f} MB")
    print(f"ratio: time {time_ratio:.2f}, memory {memory_ratio:.2f} (limit {LIMIT})")
    return 0 if time_ratio <= LIMIT and memory_ratio <= LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
