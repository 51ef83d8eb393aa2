"""scripts/refresh-screenshots names browser tests and the pictures they take: a renamed test
or picture must break here, not silently leave a stale picture in docs/screenshots."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from hpc_magics.scheduler import commands

REPO_ROOT = Path(__file__).resolve().parent.parent
SCRIPT = REPO_ROOT / "scripts" / "refresh-screenshots"


def named_tests(text: str) -> list[str]:
    return re.findall(r'^\s+"?(tests/e2e/\S+?)"?$', text, re.M)


def named_pictures(text: str) -> list[str]:
    found = re.search(r"^pictures=\(([^)]*)\)", text, re.M)
    assert found is not None, "the script lists no pictures"
    return found.group(1).split()


def test_the_script_runs_tests_that_exist_and_take_its_pictures() -> None:
    text = SCRIPT.read_text()
    tests, pictures = named_tests(text), named_pictures(text)
    # every picture in docs/screenshots is retaken by the script, none left to go stale
    shown = sorted(path.stem for path in (REPO_ROOT / "docs" / "screenshots").glob("*.png"))
    assert len(tests) >= 1 and sorted(pictures) == shown, (tests, pictures)

    collected = commands.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                              "-p", "no:cacheprovider", *tests], timeout=120)
    listed = set(collected.stdout.split())
    missing = [test for test in tests if test not in listed]
    assert not missing, f"the script names tests that do not exist: {missing}\n" \
                        f"{collected.stdout[-2000:]}{collected.stderr[-2000:]}"

    # each picture is taken, by name, by one of those tests' files
    sources = "".join((REPO_ROOT / test.split("::")[0]).read_text() for test in tests)
    untaken = [name for name in pictures if f'"{name}"' not in sources]
    assert not untaken, f"no test of the script takes {untaken}"
    for name in pictures:
        picture = REPO_ROOT / "docs" / "screenshots" / f"{name}.png"
        assert picture.read_bytes().startswith(b"\x89PNG"), picture
