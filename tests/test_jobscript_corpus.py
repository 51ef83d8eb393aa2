"""Real job scripts (tests/corpus/jobscripts.toml): every one the cluster runs passes the
checker (warnings allowed), every one it refuses fails naming the right option.

The manifest holds each script's #SBATCH options and values as data; the block is rebuilt
from them. When the original is at hand it is checked as well: NAME.sh in
tests/corpus/jobscripts/ (git-ignored), in $HPC_MAGICS_CORPUS/jobscripts/ or in
shared/corpus/jobscripts/ beside the clone; a script from a seed guide (path "seeds/FILE
lines A-B") is read from shared/seeds/ beside the clone, which every helper's machine has.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from hpc_magics.core.checkscript import ScriptReport, check_script, render
from hpc_magics.core.profiles import load_profile

HERE = Path(__file__).resolve().parent / "corpus"
MANIFEST = HERE / "jobscripts.toml"
SHARED = HERE.parent.parent.parent / "shared"  # ../shared relative to the clone
ORIGINALS = [HERE / "jobscripts", SHARED / "corpus" / "jobscripts",
             *([Path(os.environ["HPC_MAGICS_CORPUS"]) / "jobscripts"]
               if os.environ.get("HPC_MAGICS_CORPUS") else [])]
SEED_LINES = re.compile(r"(seeds/[\w.-]+) lines (\d+)-(\d+)")
SCRIPTS: list[dict[str, Any]] = tomllib.loads(MANIFEST.read_text())["script"]
CLUSTERS = {"alvis", "daint", "daint_xc", "m3", "narval", "sdumont", "clariden", "trillium",
            "sdumont2nd", "alliance", "fir", "nibi", "rorqual"}


def original(entry: dict[str, Any]) -> str | None:
    """The script as its source has it, when that is at hand."""
    seed = SEED_LINES.fullmatch(entry["path"])
    if seed:
        file = SHARED / seed.group(1)
        if not file.is_file():
            return None
        lines = file.read_text(encoding="utf-8").splitlines()
        block = lines[int(seed.group(2)) - 1:int(seed.group(3))]
        return "\n".join(["#!/bin/bash", *block, "hostname", ""])
    for folder in ORIGINALS:
        if (folder / f"{entry['name']}.sh").is_file():
            return (folder / f"{entry['name']}.sh").read_text(encoding="utf-8",
                                                              errors="replace")
    return None


def rebuilt(entry: dict[str, Any]) -> str:
    lines = ["#SBATCH " + shlex.join(tokens) for tokens in entry["directives"]]
    return "\n".join(["#!/bin/bash", *lines, "hostname", ""])


def judge(entry: dict[str, Any], script: str) -> None:
    report: ScriptReport = check_script(script, load_profile(entry["cluster"]), whole_file=True)
    shown = render(report, entry["name"])
    if entry["valid"]:
        assert report.ok, shown
    else:
        named = {f.field for f in report.errors}
        assert report.errors and set(entry["refused"]) <= named, shown


def test_the_corpus_covers_the_clusters() -> None:
    assert len(SCRIPTS) >= 30
    assert {s["cluster"] for s in SCRIPTS} == CLUSTERS
    assert all(s["source"] and s["path"] and s["asks"] and s["directives"] for s in SCRIPTS)
    assert any(not s["valid"] for s in SCRIPTS) and any(s["valid"] for s in SCRIPTS)
    assert len({s["name"] for s in SCRIPTS}) == len(SCRIPTS)


@pytest.mark.parametrize("entry", SCRIPTS, ids=[s["name"] for s in SCRIPTS])
def test_rebuilt_block(entry: dict[str, Any]) -> None:
    judge(entry, rebuilt(entry))


@pytest.mark.parametrize("entry", [  # an original absent here is not run (tests/conftest.py)
    pytest.param(s, id=s["name"], marks=() if original(s) else pytest.mark.corpus_absent)
    for s in SCRIPTS])
def test_original_file(entry: dict[str, Any]) -> None:
    script = original(entry)
    assert script is not None, f"{entry['name']}: collected as present, gone since"
    judge(entry, script)


def test_every_seed_script_names_its_lines_in_shared() -> None:
    """Seed-guide scripts are found through ../shared, never an absolute path."""
    seeded = [s for s in SCRIPTS if s["source"].startswith("seed guide")]
    assert seeded and all(SEED_LINES.fullmatch(s["path"]) for s in seeded)
    assert not any(s["path"].startswith("/") for s in SCRIPTS)
