"""``tqdm.notebook`` draws a widget; in a batch job it must be plain tqdm, writing to the log."""

from __future__ import annotations

import ast

from ._source import SourceEditor

_NOTEBOOK_MODULES = {"tqdm.notebook", "tqdm.notebook_tqdm"}
_NOTEBOOK_ALIASES = {"tqdm_notebook": "tqdm", "tnrange": "trange"}


def plain_progress_bars(source: str) -> str:
    """``source`` with every notebook progress bar replaced by its plain tqdm twin."""
    if "tqdm" not in source:
        return source
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython syntax left in (a notebook job): line by line
        return "".join(_plain_line(line) for line in source.splitlines(keepends=True))
    editor = SourceEditor(source)
    for node in ast.walk(tree):
        replacement = _replacement(node)
        if replacement is not None:
            editor.replace_node(node, replacement)
    return editor.result()


def _replacement(node: ast.AST) -> str | None:
    if isinstance(node, ast.ImportFrom) and node.level == 0:
        if node.module in _NOTEBOOK_MODULES:
            return ast.unparse(ast.ImportFrom("tqdm", node.names, 0))
        if node.module == "tqdm" and any(
            a.name in _NOTEBOOK_ALIASES or a.name == "notebook" for a in node.names
        ):
            names = [_plain_alias(a) for a in node.names]
            return ast.unparse(ast.ImportFrom("tqdm", names, 0))
    if isinstance(node, ast.Import) and any(a.name in _NOTEBOOK_MODULES for a in node.names):
        names = [
            ast.alias("tqdm", a.asname) if a.name in _NOTEBOOK_MODULES else a for a in node.names
        ]
        return ast.unparse(ast.Import(names))
    if (
        isinstance(node, ast.Attribute)
        and node.attr == "notebook"
        and isinstance(node.value, ast.Name)
        and node.value.id == "tqdm"
    ):
        return "tqdm"
    return None


def _plain_alias(alias: ast.alias) -> ast.alias:
    if alias.name == "notebook":  # ``from tqdm import notebook`` → the plain module, same name
        return ast.alias("std", alias.asname or "notebook")
    if alias.name in _NOTEBOOK_ALIASES:
        return ast.alias(_NOTEBOOK_ALIASES[alias.name], alias.asname or alias.name)
    return alias


def _plain_line(line: str) -> str:
    """One line, for cells that are not plain Python (``%matplotlib`` beside an import)."""
    if "tqdm" not in line:
        return line
    indent = line[: len(line) - len(line.lstrip())]
    try:
        statement = ast.parse(line.strip()).body
    except SyntaxError:
        return line
    if len(statement) != 1:
        return line
    replacement = _replacement(statement[0])
    if replacement is None:
        return line
    return indent + replacement + ("\n" if line.endswith("\n") else "")
