"""Run every ``benchmarks/bench_*.py`` module's ``rows()``; print one table, write JSON.

    python benchmarks/run.py [--json PATH] [--only NAME ...]

``scripts/run-benchmarks`` calls this after bringing the test cluster up. A module that
cannot run here raises ``_common.Skipped`` (the cluster is down, say): one line says so.
Exit status 0 when every row is ``ok``; 1 when a row is ``over`` or a module failed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the modules import _common as scripts do

from _common import KEYS, Skipped, slurm_release  # noqa: E402

COLUMNS = ("slurm", *KEYS)  # the release the run was on, then each row's own


def table(rows: list[dict[str, Any]]) -> str:
    cells = [list(COLUMNS)] + [[str(r.get(key, "")) for key in COLUMNS] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
             for line in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown(rows: list[dict[str, Any]]) -> str:
    """The same table for the README."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(r.get(k, "")) for k in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the rows here as a JSON list")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table too")
    parser.add_argument("--only", nargs="*", default=[],
                        help="module names to run (bench_convert ...); default: all")
    args = parser.parse_args()
    # the hub's 300 watcher processes leave the machine loaded for a minute: timed rows first
    names = sorted((p.stem for p in HERE.glob("bench_*.py")),
                   key=lambda name: (name == "bench_hub_load", name))
    if args.only:
        names = [n for n in names if n in args.only or n.removeprefix("bench_") in args.only]
    rows: list[dict[str, Any]] = []
    failed: list[str] = []
    release = slurm_release()
    print(f"[run-benchmarks] Slurm {release}", flush=True)
    for name in names:
        started = time.monotonic()
        print(f"[run-benchmarks] {name} ...", flush=True)
        try:
            module = importlib.import_module(name)
            produced = module.rows()
        except Skipped as why:
            print(f"[run-benchmarks] {name} skipped: {why}", flush=True)
            continue
        except Exception:
            traceback.print_exc()
            print(f"[run-benchmarks] {name} FAILED (see above)", flush=True)
            failed.append(name)
            continue
        for produced_row in produced:
            missing = [k for k in KEYS if k not in produced_row]
            if missing or produced_row["verdict"] not in ("ok", "over"):
                print(f"[run-benchmarks] {name}: a malformed row {produced_row!r}")
                failed.append(name)
                continue
            rows.append({"slurm": release, **{k: produced_row[k] for k in KEYS}})
        print(f"[run-benchmarks] {name}: {len(produced)} rows in "
              f"{time.monotonic() - started:.0f} s", flush=True)
    print()
    print(table(rows))
    if args.markdown:
        print()
        print(markdown(rows))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
        print(f"\n[run-benchmarks] rows written to {args.json}")
    over = [r["metric"] for r in rows if r["verdict"] == "over"]
    if over:
        print(f"[run-benchmarks] over target: {'; '.join(over)}")
    if failed:
        print(f"[run-benchmarks] failed: {', '.join(failed)}")
    return 1 if over or failed else 0


if __name__ == "__main__":
    sys.exit(main())
