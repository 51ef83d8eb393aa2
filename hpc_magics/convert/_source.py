"""Edit Python source at statement granularity, keeping the user's formatting and comments.

``ast`` gives every statement its line and (UTF-8 byte) column range; ``ast.unparse`` would
lose comments and layout, so the converters rewrite only the ranges they change.
"""

from __future__ import annotations

import ast
from itertools import accumulate


def parsed(text: str) -> ast.Module | None:
    """The syntax tree of ``text``, or None when it is not Python."""
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


class SourceEditor:
    """Collects non-overlapping replacements on ``text`` and applies them at once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self._line_starts = [0, *accumulate(len(line) for line in self.lines)]
        self._edits: list[tuple[int, int, str]] = []  # start, end, replacement

    def _offset(self, lineno: int, col_bytes: int) -> int:
        """Character offset of an ast (1-based line, byte column) position."""
        if lineno > len(self.lines):
            return len(self.text)
        line = self.lines[lineno - 1].encode()[:col_bytes].decode(errors="ignore")
        return self._line_starts[lineno - 1] + len(line)

    def line_text(self, lineno: int) -> str:
        return self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""

    def indentation(self, node: ast.stmt | ast.expr) -> str:
        line = self.line_text(node.lineno)
        return line[: len(line) - len(line.lstrip())]

    def _span(self, node: ast.AST) -> tuple[int, int]:
        """Character offsets where a statement or expression starts and ends."""
        line = getattr(node, "lineno", 1)
        return (self._offset(line, getattr(node, "col_offset", 0)),
                self._offset(getattr(node, "end_lineno", None) or line,
                             getattr(node, "end_col_offset", None) or 0))

    def alone_on_lines(self, node: ast.stmt) -> bool:
        """Nothing but whitespace before the node and whitespace or a comment after it."""
        start, end = self._span(node)
        before = self.text[self._line_starts[node.lineno - 1] : start]
        after = self.text[end : self._line_starts[node.end_lineno or node.lineno]]
        # ``plt.plot(x);`` (the semicolon hides the value in a notebook) counts as alone too
        rest = after.strip().removeprefix(";").strip()
        return not before.strip() and (not rest or rest.startswith("#"))

    def replace_node(self, node: ast.AST, text: str) -> None:
        self._edits.append((*self._span(node), text))

    def replace_lines(self, first: int, last: int, text: str) -> None:
        """Replace whole lines ``first``..``last`` (1-based, inclusive); ``text`` ends with \\n."""
        self._edits.append(
            (self._line_starts[first - 1], self._line_starts[min(last, len(self.lines))], text))

    def remove_statement(self, node: ast.stmt, marker: str | None, *,
                         pass_if_empty: bool = False, then: str = "") -> None:
        """Comment out (``marker`` given) or delete a statement; ``pass`` keeps a block valid;
        ``then``: lines to put in its place (when alone on its lines)."""
        if not self.alone_on_lines(node):
            # Shares its line with other code (``a = 1; plt.show()``, ``for x in y: f(x)``):
            # ``pass`` keeps every such line valid whatever else on it goes or stays.
            self.replace_node(node, "pass")
            return
        indent = self.indentation(node)
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        last = node.end_lineno or node.lineno
        body = "".join(self.lines[first - 1 : last])
        self.replace_lines(first, last, (f"{indent}pass\n" if pass_if_empty else "") + (
            comment_block(body, indent, marker) if marker is not None else "") + then)

    def result(self) -> str:
        pieces: list[str] = []
        position = 0
        for start, end, text in sorted(self._edits, key=lambda e: (e[0], e[1])):
            if start >= position:  # an overlapping edit: the outer one already covers it
                pieces += [self.text[position:start], text]
                position = end
        return "".join(pieces) + self.text[position:]


def comment_block(body: str, indent: str, marker: str) -> str:
    """``body`` as comment lines at ``indent``, each tagged with ``marker``."""
    return "".join(
        f"{indent}# {marker} {line[len(indent):] if line.startswith(indent) else line.lstrip()}"
        .rstrip() + "\n" for line in body.splitlines())


def string_literal(text: str) -> str:
    """A readable Python literal for ``text``: triple-quoted when that is safe, else repr."""
    if "\n" in text and '"""' not in text and "\\" not in text and not text.endswith('"'):
        return '"""\\\n' + text + '"""'
    return repr(text)
