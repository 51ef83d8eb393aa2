"""Small questions about a statement's syntax tree, asked by the display analysis: which
names it reads or binds, what it executes, whether it only displays or does nothing."""

from __future__ import annotations

import ast

from . import display_rules as rules
from .display_rules import (
    PURE_BUILTINS,
    PURE_METHODS,
)


def role_for_module(module: str) -> str | None:
    """The library a module belongs to (its most specific table), by name."""
    best: tuple[str, str] | None = None
    for library in rules.LIBRARIES:
        for prefix in library.modules:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > len(best[0])
            ):
                best = (prefix, library.name)
    return best[1] if best else None


def chain_root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def executed(node: ast.AST) -> list[ast.AST]:
    """``node`` and the nodes inside it that run when it is evaluated (not lambda bodies)."""
    found: list[ast.AST] = []
    pending = [node]
    while pending:
        current = pending.pop()
        found.append(current)
        if not isinstance(current, ast.Lambda):
            pending.extend(ast.iter_child_nodes(current))
    return found


def names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def target_names(target: ast.AST) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for element in target.elts for n in target_names(element)]
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    return []


def only_displays(node: ast.AST) -> bool:
    """A value a cell ended with only to show it: removing it changes nothing computed.

    A bare name, attribute or literal, or a chain of known-pure inspection methods on one
    (``df.describe().round(2)``, ``len(x)``).  A subscript may call ``__missing__`` and any
    other call may change state (``queue.get()``, ``next(it)``, ``df.dropna(inplace=True)``):
    those stay, as statements.
    """
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return only_displays(node.value)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(only_displays(e) for e in node.elts)
    if isinstance(node, ast.Call):
        if any(k.arg == "inplace" for k in node.keywords):
            return False
        args_inert = all(inert(a) for a in node.args) and all(inert(k.value) for k in node.keywords)
        if isinstance(node.func, ast.Attribute) and node.func.attr in PURE_METHODS:
            return args_inert and only_displays(node.func.value)
        if isinstance(node.func, ast.Name) and node.func.id in PURE_BUILTINS:
            return args_inert
    return False


def inert(node: ast.AST) -> bool:
    """An argument whose evaluation runs no code: a literal, a name, an attribute."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.Attribute):
        return inert(node.value)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(inert(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return inert(node.operand)
    return False


def bodies(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists nested in ``statement`` (if, while, try, with, match, ...)."""
    found: list[list[ast.stmt]] = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(statement, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            found.append(value)
    for handler in getattr(statement, "handlers", []):
        found.append(handler.body)
    for case in getattr(statement, "cases", []):
        found.append(case.body)
    return found
