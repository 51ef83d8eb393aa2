"""The docs site: Sphinx with MyST (the pages stay plain Markdown that GitHub shows too) and
the PyData theme (its own search). ``bash scripts/build-docs`` builds it with warnings as
errors and checks its internal links."""

import sys
from importlib.metadata import version as _installed_version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "hpc_magics"
author = "the hpc_magics authors"
release = _installed_version("hpc_magics")
version = release

extensions = ["myst_parser", "internal_links"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]

# GitHub's heading ids (the anchors README.md and the pages link to, `#which-value-wins`) for
# headings of level 1-3; a link to a missing page or anchor is a warning, so an error here.
myst_heading_anchors = 3
nitpicky = True

html_theme = "pydata_sphinx_theme"
html_title = f"hpc_magics {release}"
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_show_sourcelink = False
html_static_path = ["_static"]
html_css_files = ["hpc-magics.css"]


def _fresh_reference(app, docname, source):  # type: ignore[no-untyped-def]
    """The reference page as the code says it now, not as docs/reference.md was last
    refreshed (tests/test_reference_current.py keeps that copy current for GitHub)."""
    if docname == "reference":
        from hm_reference.__main__ import render_clean

        source[0] = render_clean()


def setup(app):  # type: ignore[no-untyped-def]
    app.connect("source-read", _fresh_reference)
