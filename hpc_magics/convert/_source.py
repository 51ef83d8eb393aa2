"""Edit Python source at statement granularity, keeping the user's formatting and comments.

``ast`` gives every statement its line and (UTF-8 byte) column range; ``ast.unparse`` would
lose comments and layout, so the converters rewrite only the ranges they change.
"""

from __future__ import annotations

import ast


class SourceEditor:
    """Collects non-overlapping replacements on ``text`` and applies them at once."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines(keepends=True)
        self._line_starts: list[int] = []
        offset = 0
        for line in self.lines:
            self._line_starts.append(offset)
            offset += len(line)
        self._line_starts.append(offset)
        self._edits: list[tuple[int, int, str]] = []  # start, end, replacement

    # ------------------------------------------------------------------ positions
    def offset(self, lineno: int, col_bytes: int) -> int:
        """Character offset of an ast (1-based line, byte column) position."""
        if lineno > len(self.lines):
            return len(self.text)
        line = self.lines[lineno - 1]
        return self._line_starts[lineno - 1] + len(
            line.encode()[:col_bytes].decode(errors="ignore")
        )

    def line_text(self, lineno: int) -> str:
        return self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""

    def indentation(self, node: ast.stmt) -> str:
        line = self.line_text(node.lineno)
        return line[: len(line) - len(line.lstrip())]

    def span(self, node: ast.AST) -> tuple[int, int]:
        """Character offsets where a statement or expression starts and ends."""
        line, col = getattr(node, "lineno", 1), getattr(node, "col_offset", 0)
        end_line = getattr(node, "end_lineno", None) or line
        end_col = getattr(node, "end_col_offset", None) or 0
        return self.offset(line, col), self.offset(end_line, end_col)

    def alone_on_lines(self, node: ast.stmt) -> bool:
        """Nothing but whitespace before the node and whitespace or a comment after it."""
        start, end = self.span(node)
        before = self.text[self._line_starts[node.lineno - 1] : start]
        after = self.text[end : self._line_starts[node.end_lineno or node.lineno]]
        # ``plt.plot(x);`` (the semicolon hides the value in a notebook) counts as alone too
        rest = after.strip().removeprefix(";").strip()
        return not before.strip() and (not rest or rest.startswith("#"))

    # ------------------------------------------------------------------ edits
    def replace_node(self, node: ast.AST, text: str) -> None:
        self._edits.append((*self.span(node), text))

    def replace_lines(self, first: int, last: int, text: str) -> None:
        """Replace whole lines ``first``..``last`` (1-based, inclusive); ``text`` ends with \\n."""
        self._edits.append(
            (self._line_starts[first - 1], self._line_starts[min(last, len(self.lines))], text))

    def remove_statement(
        self, node: ast.stmt, marker: str | None, *, pass_if_empty: bool = False
    ) -> None:
        """Comment out (``marker`` given) or delete a statement; ``pass`` keeps a block valid."""
        indent = self.indentation(node)
        if self.alone_on_lines(node):
            first, last = self._first_line(node), node.end_lineno or node.lineno
            body = "".join(self.lines[first - 1 : last])
            out = ""
            if pass_if_empty:
                out += f"{indent}pass\n"
            if marker is not None:
                out += comment_block(body, indent, marker)
            self.replace_lines(first, last, out)
            return
        # Shares its line with other code (``a = 1; plt.show()``, ``for x in y: f(x)``):
        # ``pass`` keeps every such line valid whatever else on it goes or stays.
        self.replace_node(node, "pass")

    def _first_line(self, node: ast.stmt) -> int:
        decorators = getattr(node, "decorator_list", None)
        if decorators:
            return min(d.lineno for d in decorators)
        return node.lineno

    def result(self) -> str:
        if not self._edits:
            return self.text
        pieces: list[str] = []
        position = 0
        for start, end, text in sorted(self._edits, key=lambda e: (e[0], e[1])):
            if start < position:  # overlapping edit: the outer one already covers it
                continue
            pieces += [self.text[position:start], text]
            position = end
        pieces.append(self.text[position:])
        return "".join(pieces)


def comment_block(body: str, indent: str, marker: str) -> str:
    """``body`` as comment lines at ``indent``, each tagged with ``marker``."""
    out = []
    for line in body.splitlines():
        rest = line[len(indent) :] if line.startswith(indent) else line.lstrip()
        out.append(f"{indent}# {marker} {rest}".rstrip() + "\n")
    return "".join(out)


def string_literal(text: str) -> str:
    """A readable Python literal for ``text``: triple-quoted when that is safe, else repr."""
    if "\n" in text and '"""' not in text and "\\" not in text and not text.endswith('"'):
        return '"""\\\n' + text + '"""'
    return repr(text)
