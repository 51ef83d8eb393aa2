"""A notebook's code as a script that worker processes may import again.

A worker started with ``spawn`` or ``forkserver`` runs the main script again, as
``__mp_main__``, to find the functions it was sent by name; without an
``if __name__ == "__main__":`` guard it runs the whole notebook again, which starts workers
again (``BrokenProcessPool``, "Nanny failed to start").

So each top-level statement is either a *definition*, run in the workers too (imports,
functions, classes, names bound without a call, e.g. ``N = 100``), or an *action*, run only
in the main process, under the guard, in the notebook's order.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import tokenize
from collections.abc import Iterable

GUARD = 'if __name__ == "__main__":\n'
_INDENT = "    "
_BUILTINS = frozenset(dir(builtins))
_NO_CALLS = (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)


class _EvaluatedNames(ast.NodeVisitor):
    """Names read when a statement runs; a function's body runs later, so only its
    decorators, defaults and annotations count."""

    def __init__(self) -> None:
        self.loaded: set[str] = set()
        self.stored: set[str] = set()

    def visit_Name(self, node: ast.Name) -> None:
        (self.loaded if isinstance(node.ctx, ast.Load) else self.stored).add(node.id)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        arguments = node.args
        for part in (*arguments.defaults, *arguments.kw_defaults):
            if part is not None:
                self.visit(part)
        if not isinstance(node, ast.Lambda):
            for decorator in node.decorator_list:
                self.visit(decorator)
            every = (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                     arguments.vararg, arguments.kwarg)
            for annotation in (*(a.annotation for a in every if a is not None), node.returns):
                if annotation is not None:
                    self.visit(annotation)
            self.stored.add(node.name)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for part in (*node.decorator_list, *node.bases, *node.keywords):
            self.visit(part)
        inside = _EvaluatedNames()
        for statement in node.body:
            inside.visit(statement)
        self.loaded |= inside.loaded - inside.stored  # a class body's own names are its own
        self.stored.add(node.name)


def _reads_only(node: ast.AST, known: set[str]) -> bool:
    if "*" in known:  # after ``from x import *`` any name may be bound
        return True
    names = _EvaluatedNames()
    names.visit(node)
    return names.loaded <= known | _BUILTINS


def _bound_by(statement: ast.stmt) -> set[str]:
    names = _EvaluatedNames()
    names.visit(statement)
    bound = set(names.stored)
    if isinstance(statement, ast.Import | ast.ImportFrom):
        bound |= {(a.asname or a.name).split(".")[0] for a in statement.names}
    return bound


def is_definition(statement: ast.stmt, known: set[str]) -> bool:
    """Safe and useful to run again in a worker: it defines, calls nothing, and reads only
    names the definitions before it bound (``known``) or builtins."""
    if isinstance(statement, ast.Import | ast.ImportFrom | ast.Pass):
        return True
    if isinstance(statement, ast.Expr):  # a docstring; any other expression is an action
        return isinstance(statement.value, ast.Constant)
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return _reads_only(statement, known)
    if isinstance(statement, ast.Assign | ast.AnnAssign) and statement.value is not None:
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        plain = all(isinstance(t, ast.Name) or (isinstance(t, ast.Tuple | ast.List) and all(
            isinstance(e, ast.Name) for e in t.elts)) for t in targets)
        calls = any(isinstance(n, _NO_CALLS) for n in ast.walk(statement.value))
        return plain and not calls and _reads_only(statement.value, known)
    if isinstance(statement, ast.Try):  # try: import x / except ImportError: x = None
        parts = [*statement.body, *statement.orelse, *statement.finalbody,
                 *(s for h in statement.handlers for s in h.body)]
        types = [h.type for h in statement.handlers if h.type is not None]
        return all(is_definition(s, known) for s in parts) and all(
            _reads_only(t, known) for t in types)
    return False


def _string_lines(text: str) -> set[int]:
    """Line numbers that begin inside a multi-line string (indenting them changes it)."""
    inside: set[int] = set()
    with contextlib.suppress(tokenize.TokenError, SyntaxError):
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.end[0] > token.start[0]:
                inside.update(range(token.start[0] + 1, token.end[0] + 1))
    return inside


def _segments(tree: ast.Module) -> Iterable[tuple[int, int, list[ast.stmt]]]:
    """(first line, last line, statements) per run of lines; statements sharing a line
    (``import os; run()``) are one segment."""
    current: list[ast.stmt] = []
    first = last = 0
    for statement in tree.body:
        start = min([statement.lineno, *(d.lineno for d in getattr(
            statement, "decorator_list", ()))])
        end = statement.end_lineno or statement.lineno
        if current and start <= last:
            current.append(statement)
            last = max(last, end)
            continue
        if current:
            yield first, last, current
        current, first, last = [statement], start, end
    if current:
        yield first, last, current


def guard_actions(text: str, known: set[str]) -> str:
    """The cell with its actions under the guard; ``known`` (the names earlier definitions
    bound) grows by this cell's definitions. A cell that is not Python is returned as is."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    strings = _string_lines(text)
    out: list[str] = []
    guarded = False
    taken = 0  # lines already written
    for _first, last, statements in _segments(tree):
        define = all(is_definition(s, known) for s in statements)
        if define:
            for statement in statements:
                known |= _bound_by(statement)
        if not define and not guarded:
            out.append(GUARD)
        guarded = not define
        for number in range(taken + 1, last + 1):
            line = lines[number - 1]
            indent = guarded and number not in strings and line.strip()
            out.append(_INDENT + line if indent else line)
        taken = last
    out += lines[taken:]
    return "".join(out)
