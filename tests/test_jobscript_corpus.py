"""Real job scripts (tests/corpus/jobscripts.toml): every one the cluster runs passes the
checker (warnings allowed), every one it refuses fails naming the right option.

The manifest holds each script's #SBATCH options and values as data; the block is rebuilt
from them. When the original file is here (tests/corpus/jobscripts/NAME.sh, git-ignored, filled by
scripts/corpus-from-mirrors, or ../shared/corpus/jobscripts/NAME.sh beside the clone) it is
checked as well.
"""

from __future__ import annotations

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
from hpc_magics.core.profiles import available_profiles, load_profile

HERE = Path(__file__).resolve().parent / "corpus"
MANIFEST = HERE / "jobscripts.toml"
ORIGINALS = (HERE / "jobscripts", HERE.parents[2] / "shared" / "corpus" / "jobscripts")
SCRIPTS: list[dict[str, Any]] = tomllib.loads(MANIFEST.read_text())["script"]
SEED_CLUSTERS = {"alvis", "daint", "daint_xc", "m3", "narval", "sdumont"}
PROFILES = available_profiles()


def rebuilt(entry: dict[str, Any]) -> str:
    lines = ["#SBATCH " + shlex.join(tokens) for tokens in entry["directives"]]
    return "\n".join(["#!/bin/bash", *lines, "hostname", ""])


def judge(entry: dict[str, Any], script: str) -> None:
    if entry["cluster"] not in PROFILES:  # today's systems: their profiles come with a branch
        pytest.skip(f"no profile {entry['cluster']!r} in this checkout for {entry['name']}")
    report: ScriptReport = check_script(script, load_profile(entry["cluster"]), whole_file=True)
    shown = render(report, entry["name"])
    if entry["valid"]:
        assert report.ok, shown
    else:
        named = {f.option for f in report.errors}
        assert report.errors and set(entry["refused"]) <= named, shown


def test_the_corpus_covers_the_clusters() -> None:
    assert len(SCRIPTS) >= 30
    assert SEED_CLUSTERS <= {s["cluster"] for s in SCRIPTS} <= SEED_CLUSTERS | {
        "clariden", "fir", "nibi", "rorqual", "trillium", "sdumont2nd"}
    assert SEED_CLUSTERS <= set(PROFILES)
    assert all(s["source"] and s["path"] and s["asks"] and s["directives"] for s in SCRIPTS)
    assert any(not s["valid"] for s in SCRIPTS) and any(s["valid"] for s in SCRIPTS)
    assert len({s["name"] for s in SCRIPTS}) == len(SCRIPTS)


@pytest.mark.parametrize("entry", SCRIPTS, ids=[s["name"] for s in SCRIPTS])
def test_rebuilt_block(entry: dict[str, Any]) -> None:
    judge(entry, rebuilt(entry))


@pytest.mark.parametrize("entry", SCRIPTS, ids=[s["name"] for s in SCRIPTS])
def test_original_file(entry: dict[str, Any]) -> None:
    found = [d / f"{entry['name']}.sh" for d in ORIGINALS if (d / f"{entry['name']}.sh").is_file()]
    if not found:
        pytest.skip(f"original not here: {entry['source']} {entry['path']}")
    judge(entry, found[0].read_text(encoding="utf-8", errors="replace"))
