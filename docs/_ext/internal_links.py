"""A check of the built site's internal links: every relative ``href``/``src`` in the HTML
names a file that was built, and every ``#anchor`` an id in that file.

Sphinx's ``linkcheck`` would reach the internet; MyST already warns about a Markdown link
to a missing page or heading, and this catches the rest (raw HTML, images, the theme's own
links). Each broken link is a Sphinx warning, so ``sphinx-build -W`` fails on it.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from sphinx.util import logging

logger = logging.getLogger(__name__)


class _Page(HTMLParser):
    """The ids a page defines and the relative links it makes."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (name == "name" and tag == "a"):
                self.ids.add(value)
            elif name in ("href", "src") and not _external(value):
                self.links.append(value)


def _external(link: str) -> bool:
    parts = urlsplit(link)
    return bool(parts.scheme or parts.netloc)  # https:, mailto:, javascript:, //host


def broken_links(site: Path) -> list[str]:
    """One line per broken internal link of the HTML pages under ``site``."""
    pages: dict[Path, _Page] = {}
    for path in sorted(site.rglob("*.html")):
        if "_static" in path.relative_to(site).parts:
            continue  # the theme's own templates, copied as they are
        page = _Page()
        page.feed(path.read_text(encoding="utf-8"))
        pages[path.resolve()] = page
    broken = []
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            where = path.relative_to(site.resolve())
            if not target.exists():
                broken.append(f"{where}: {link} names a file the build did not make")
            elif parts.fragment and target in pages \
                    and unquote(parts.fragment) not in pages[target].ids:
                broken.append(f"{where}: {link} names an anchor that page lacks")
    return broken


def _check(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for line in broken_links(Path(app.outdir)):
        logger.warning("broken internal link: %s", line)


def setup(app: Any) -> dict[str, Any]:
    app.connect("build-finished", _check)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
