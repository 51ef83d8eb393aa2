"""Every name sees one object: notebook names that share objects with what a cell ships.

A cell that names only ``opt`` (an optimizer holding ``model``'s parameters) ships ``opt``;
brought back, ``opt`` would hold new parameters while the notebook's ``model`` kept the old
ones. So names sharing objects with the shipped ones travel too, in the same pickle, and an
unchanged name comes back too when what comes back holds objects inside it
(:func:`come_back_together`).

The walk follows ``gc.get_referents`` (nothing pickled), stops at functions, classes and
modules, ignores what Python shares by design (numbers, strings, tuples, ``None``), and
ends after ``MAX_OBJECTS`` objects.
"""

from __future__ import annotations

import enum
import gc
import logging
import types
from collections.abc import Callable, Collection, Mapping
from typing import Any

MAX_OBJECTS = 100_000

# not followed: what they reach is code and globals, not the value's state (a logger
# reaches every logger of the process through its manager)
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
           types.MethodType, types.CodeType, types.FrameType, logging.Logger,
           logging.Manager)
# followed, but shared by Python itself (interned, cached, immutable, singletons such as
# enum members): not a shared object
_NO_IDENTITY = (int, float, complex, str, bytes, bool, tuple, frozenset, type(None),
                type(Ellipsis), type(NotImplemented), range, slice, enum.Enum)


def reachable(value: Any, limit: int = MAX_OBJECTS, stop: Collection[int] = ()) -> set[int]:
    """ids of the mutable objects ``value`` reaches (itself included); objects whose id is in
    ``stop`` are counted but not entered (they travel as references)."""
    seen: set[int] = set()
    found: set[int] = set()
    stack = [value]
    while stack and len(seen) < limit:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, _OPAQUE):
            continue
        seen.add(id(obj))
        if not isinstance(obj, _NO_IDENTITY):
            found.add(id(obj))
        if obj is value or id(obj) not in stop:
            stack.extend(gc.get_referents(obj))
    return found


def _groups(graphs: Mapping[str, set[int]]) -> list[list[str]]:
    """Names whose graphs overlap, directly or through another name, as groups."""
    groups: list[tuple[list[str], set[int]]] = []
    for name, ids in graphs.items():
        joined = [g for g in groups if g[1] & ids]
        names, union = [name], set(ids)
        for group in joined:
            names = group[0] + names
            union |= group[1]
            groups.remove(group)
        groups.append((names, union))
    return [names for names, _ in groups]


def companions(shipped: Mapping[str, Any], namespace: Mapping[str, Any],
               eligible: Callable[[str, Any], bool]
               ) -> tuple[dict[str, Any], tuple[tuple[str, ...], ...]]:
    """The notebook names (``eligible`` ones) that share objects with ``shipped`` data, and
    the groups of shipped and companion names that share objects (two names or more)."""
    graphs = {name: reachable(value) for name, value in shipped.items()}
    everything = set().union(*graphs.values()) if graphs else set()
    extra: dict[str, Any] = {}
    for name, value in namespace.items():
        if name in shipped or not eligible(name, value):
            continue
        ids = reachable(value)
        if ids & everything:
            extra[name] = value
            graphs[name] = ids
    groups = tuple(tuple(g) for g in _groups(graphs) if len(g) > 1)
    return extra, groups


def come_back_together(back: Mapping[str, Any], unchanged: Mapping[str, Any]
                       ) -> tuple[tuple[str, ...], dict[str, Any]]:
    """Unchanged shipped names that must come back with ``back`` (what comes back by value),
    and those that stay (sent back as references to the notebook's own objects): one
    stays when what comes back reaches at most its whole object, not an object inside it.
    """
    staying = dict(unchanged)
    moved: list[str] = []
    values = list(back.values())
    while True:
        tops = {id(v) for v in staying.values()}
        returning: set[int] = set()
        for value in values:
            returning |= reachable(value, stop=tops)
        name = next((n for n, v in staying.items()
                     if (reachable(v, stop=tops - {id(v)}) & returning) - tops), None)
        if name is None:
            return tuple(moved), staying
        moved.append(name)
        values.append(staying.pop(name))
