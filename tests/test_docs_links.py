"""The docs site's internal-link check (docs/_ext/internal_links.py, run by
scripts/build-docs) names every relative link or anchor of the built HTML that resolves to
nothing, and nothing else."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def _checker():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "internal_links", REPO_ROOT / "docs" / "_ext" / "internal_links.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_broken_links_and_anchors_are_named_and_good_ones_are_not(tmp_path: Path) -> None:
    (tmp_path / "admin").mkdir()
    (tmp_path / "_static").mkdir()
    (tmp_path / "_static" / "theme.css").write_text("", encoding="utf-8")
    # the theme's templates are copied into _static as they are: not pages
    (tmp_path / "_static" / "macros.html").write_text(
        "<a href=\"{{ pathto('x') }}\">x</a>", encoding="utf-8")
    (tmp_path / "index.html").write_text(
        '<link href="_static/theme.css?digest=1"><h1 id="top">hpc_magics</h1>'
        '<a href="admin/install.html#when-elsewhere">ok</a> <a href="#top">ok</a>'
        '<a href="https://example.org/missing.html">external</a> <a href="mailto:a@b">mail</a>'
        '<a href="admin/">folder</a>'
        '<a href="gone.html">file</a> <a href="admin/install.html#nowhere">anchor</a>'
        '<img src="screenshots/status-bar.png">', encoding="utf-8")
    (tmp_path / "admin" / "index.html").write_text('<a href="../index.html#top">up</a>',
                                                   encoding="utf-8")
    (tmp_path / "admin" / "install.html").write_text(
        '<section id="when-elsewhere"><a href="../index.html#bottom">x</a></section>',
        encoding="utf-8")

    assert sorted(_checker().broken_links(tmp_path)) == [
        "admin/install.html: ../index.html#bottom names an anchor that page lacks",
        "index.html: admin/install.html#nowhere names an anchor that page lacks",
        "index.html: gone.html names a file the build did not make",
        "index.html: screenshots/status-bar.png names a file the build did not make",
    ]
