"""The README and docs/ say only what the code has: their links resolve, and every magic,
subcommand, setting and environment variable they name exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
# docs/ and its folders (docs/admin): the pages of the docs site (scripts/build-docs)
PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
SCREENSHOTS = ("status-bar.png", "stop-dialog.png", "job-widget.png", "efficiency.png",
               "sweep-table.png", "kernel-status-bar.png")
COURSE = ("getting-started", "notebook-to-batch", "sweep-job-array", "multi-node",
          "checkpoint-requeue", "your-server")  # in teaching order
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _anchors(page: Path) -> set[str]:
    """GitHub's heading ids: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#{1,6} (.+)$", _text(page), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def _local_links(page: Path) -> list[tuple[str, Path, str]]:
    """(link as written, the file it names, its #anchor) for links into the repository."""
    found = []
    for target in LINK.findall(_text(page)):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        found.append((target, (page.parent / path).resolve() if path else page, anchor))
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_links_resolve(page: Path) -> None:
    for target, path, anchor in _local_links(page):
        if path.parent == REPO_ROOT / "docs" / "screenshots":
            continue  # test_screenshots
        if path.parent == REPO_ROOT / "notebooks":
            continue  # test_workshop_notebooks_in_the_readme_exist
        assert path.exists(), f"{page.name}: the link {target} names a missing file"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{page.name}: {target} has no such heading"


def test_screenshots_are_referenced_by_their_names() -> None:
    readme = _text(REPO_ROOT / "README.md")
    for name in SCREENSHOTS:
        assert re.search(rf"!\[[^\]]{{20,}}\]\(docs/screenshots/{re.escape(name)}\)", readme), \
            f"README.md shows no {name} with an alt text"
    folder = REPO_ROOT / "docs" / "screenshots"
    if not folder.is_dir():
        pytest.skip("docs/screenshots/ not made yet: scripts/refresh-screenshots makes it")
    missing = [name for name in SCREENSHOTS if not (folder / name).is_file()]
    assert not missing, f"docs/screenshots/ lacks {missing}: run scripts/refresh-screenshots"


def test_workshop_notebooks_in_the_readme_exist() -> None:
    named = re.findall(r"\]\(notebooks/([\w-]+)\.ipynb\)", _text(REPO_ROOT / "README.md"))
    assert named == list(COURSE), "README.md's notebook table is not the course in its order"
    present = {p.stem for p in (REPO_ROOT / "notebooks").glob("*.ipynb")}
    if present == {"getting-started"}:
        pytest.skip("the other workshop notebooks and their index land from their own branches")
    missing = [name for name in named if name not in present]
    assert not missing, f"README.md names notebooks that are not in notebooks/: {missing}"
    assert (REPO_ROOT / "notebooks" / "README.md").is_file(), "notebooks/README.md is missing"


def test_the_two_setup_commands_are_there() -> None:
    readme = _text(REPO_ROOT / "README.md")
    for script in ("run-lab", "run-tests"):
        assert re.search(rf"^bash scripts/{script} +# ", readme, flags=re.MULTILINE), script
        assert (REPO_ROOT / "scripts" / script).is_file()


def _named(pattern: str) -> dict[str, str]:
    """Each match of ``pattern``'s group in the pages → the page it is in."""
    found: dict[str, str] = {}
    for page in PAGES:
        for name in re.findall(pattern, _text(page)):
            found.setdefault(name, page.name)
    return found


def test_the_magics_commands_and_settings_named_exist() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    from hpc_magics import cli
    from hpc_magics.magics.jobs import HpcMagicsKernel
    from hpc_magics.server.extension import HpcMagicsServer

    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("hpc_magics")  # once per suite, as %load_ext
    magics = {name for table in shell.magics_manager.magics.values() for name in table}
    for name, page in _named(r"%%?((?:hpc_\w+|sbatch))\b").items():
        assert name in magics, f"{page} names %{name}, which is no magic"
    for name, page in _named(r"`hpc-magics ([a-z][\w-]*)").items():
        assert name in cli.SUBCOMMANDS, f"{page} names `hpc-magics {name}`: no such command"
    for settings in (HpcMagicsKernel, HpcMagicsServer):
        spelled = settings.__name__
        for name, page in _named(rf"c\.{spelled}\.(\w+)").items():
            assert name in settings.class_traits(config=True), \
                f"{page} names c.{spelled}.{name}: no such setting"


def test_the_environment_variables_named_are_declared() -> None:
    from hm_reference.page import environment_variables

    declared = {row["name"] for row in environment_variables()}
    for name, page in _named(r"\b(HPC_MAGICS_[A-Z][A-Z0-9_]*)").items():
        assert name in declared, (f"{page} names {name}, which is not in "
                                  "docs/_ext/hm_reference/environment.toml")
