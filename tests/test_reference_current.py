"""docs/reference.md is what the generator makes from the definitions now, and the generator
covers every magic, subcommand, setting and environment variable there is."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hm_reference import REFRESH_COMMAND
from hm_reference.__main__ import render_clean
from hm_reference.page import environment_variables

REPO_ROOT = Path(__file__).resolve().parents[1]
REFERENCE_PAGE = REPO_ROOT / "docs" / "reference.md"
# Where an HPC_MAGICS_* variable may be read: the package, the scripts, benchmarks and tests.
SOURCE_FOLDERS = ("hpc_magics", "scripts", "benchmarks", "tests")
VARIABLE = re.compile(r"HPC_MAGICS_[A-Z][A-Z0-9_]*")


@pytest.fixture(scope="module")
def fresh_page() -> str:
    return render_clean()


def test_reference_page_is_current(fresh_page: str) -> None:
    current = REFERENCE_PAGE.read_text(encoding="utf-8") if REFERENCE_PAGE.exists() else ""
    if current != fresh_page:
        pytest.fail(f"docs/reference.md is stale: run `{REFRESH_COMMAND}` to refresh it",
                    pytrace=False)


def _section(page: str, heading: str) -> str:
    """The text under a `### heading` up to the next heading of any level 2-3."""
    start = page.index(f"### {heading}\n")
    following = re.search(r"^##+ ", page[start + 4:], flags=re.MULTILINE)
    return page[start: start + 4 + following.start()] if following else page[start:]


def test_every_magic_and_its_arguments_are_on_the_page(fresh_page: str) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    from hpc_magics.core.flags import SBATCH_FLAGS

    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("hpc_magics")  # once per suite, as %load_ext
    ours = {name: kind for kind, table in shell.magics_manager.magics.items()
            for name, bound in table.items()
            if type(getattr(bound, "__self__", None)).__module__.startswith("hpc_magics.")}
    assert {"hpc_resources", "sbatch", "hpc_fetch", "hpc_jobs", "hpc_cancel",
            "hpc_efficiency", "hpc_live", "hpc_server"} <= set(ours)
    for name, kind in ours.items():
        sign = "%%" if kind == "cell" else "%"
        assert f"`{sign}{name}`" in fresh_page, f"{sign}{name} has no section"
    sbatch = _section(fresh_page, "`%%sbatch`")
    for flag in SBATCH_FLAGS:
        assert f"--{flag.name}" in sbatch and flag.help in sbatch, flag.name
    for option in ("--wait", "--dry-run", "--sweep", "--checkpoint", "--stage"):
        assert f"`{option} " in sbatch or f"`{option}`" in sbatch, option


def test_every_subcommand_and_setting_is_on_the_page(fresh_page: str) -> None:
    from hpc_magics import cli
    from hpc_magics.server.extension import HpcMagicsServer

    for name in cli.SUBCOMMANDS:
        section = _section(fresh_page, f"`hpc-magics {name}`")
        assert f"hpc-magics {name} [-h]" in section, name  # its usage, from its own parser
    notebook = _section(fresh_page, "`hpc-magics submit`")
    for option in ("--wait", "--dry-run", "--strip-display", "--jobs-dir"):
        assert f"| `{option}" in notebook, option
    assert "`--no-live` | only read the script" in _section(fresh_page, "`hpc-magics check`")
    server = _section(fresh_page, "In the Jupyter server")
    for name, trait in HpcMagicsServer.class_own_traits(config=True).items():
        assert f"`c.HpcMagicsServer.{name}` | {type(trait).__name__} |" in server, name
    assert "`c.HpcMagicsServer.idle_stop_minutes` | Float | `0.0` |" in server
    kernel = _section(fresh_page, "In the kernel")
    assert "`c.HpcMagicsKernel.jobs_dir` | Unicode | `'hpc_jobs'` |" in kernel  # not this shell's


def test_every_public_member_of_the_handles_is_on_the_page(fresh_page: str) -> None:
    from hpc_magics.handle import JobHandle
    from hpc_magics.sweep_handle import SweepHandle

    for cls in (JobHandle, SweepHandle):
        section = _section(fresh_page, f"`{cls.__name__}`")
        public = [name for name in vars(cls) if not name.startswith("_")]
        assert "table" in public or cls is JobHandle
        for name in public:
            assert f"| `.{name}" in section, f"{cls.__name__}.{name} is not on the page"


def _variables_read_in_sources() -> dict[str, str]:
    """Each HPC_MAGICS_* name in the sources → one file that mentions it."""
    found: dict[str, str] = {}
    for folder in SOURCE_FOLDERS:
        for path in sorted((REPO_ROOT / folder).rglob("*")):
            if not path.is_file() or path.suffix in {".pyc", ".png", ".pkl", ".ipynb"}:
                continue
            if path.name == "environment.toml" or "node_modules" in path.parts:
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            for name in VARIABLE.findall(text):
                found.setdefault(name, str(path.relative_to(REPO_ROOT)))
    return found


def test_every_environment_variable_is_declared() -> None:
    declared = {row["name"] for row in environment_variables()}
    read = _variables_read_in_sources()
    missing = sorted(set(read) - declared)
    assert not missing, (f"{missing[0]} (read in {read[missing[0]]}) is not declared: add it "
                         "to docs/_ext/hm_reference/environment.toml, then run "
                         f"`{REFRESH_COMMAND}`")
    stale = sorted(declared - set(read))
    assert not stale, (f"{stale[0]} is declared in docs/_ext/hm_reference/environment.toml but "
                       "read nowhere: remove it")


def test_check_mode_names_a_stale_page_and_the_fix(tmp_path: Path) -> None:
    page = tmp_path / "reference.md"
    page.write_text("# an old page\n", encoding="utf-8")
    checked = subprocess.run(
        [sys.executable, str(REPO_ROOT / "docs" / "_ext" / "hm_reference"), "--check", "-o",
         str(page)],
        capture_output=True, text=True, timeout=180, check=False, cwd=REPO_ROOT)
    assert checked.returncode == 1
    assert checked.stderr.strip() == f"{page} is stale: run `{REFRESH_COMMAND}` to refresh it"
    assert page.read_text(encoding="utf-8") == "# an old page\n"  # --check writes nothing
