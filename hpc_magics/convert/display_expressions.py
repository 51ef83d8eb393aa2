"""Pass 1 of ``display.py``, for one expression: is it a display library's use (drawing,
showing, saving, styling a figure), data, or computation, and which figure group it
belongs to; and the small syntax questions both passes ask (which names a node reads or
binds, what it executes, whether it only displays). What names mean (display modules under
any alias, imported functions, figures, images) is tracked by the statement walk in
``display_analysis.py``; the rules are data in ``display_rules.py``.
"""

from __future__ import annotations

import ast

from . import display_rules as rules
from .display_rules import (
    COMPUTE,
    DRAW,
    DRAW_CURRENT,
    DRAW_NEW,
    FIRST,
    KEEP,
    PURE_BUILTINS,
    PURE_METHODS,
    SAVE,
    SHOW,
    STYLE,
    Library,
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

    An inert value, or a chain of known-pure inspection methods on one
    (``df.describe().round(2)``, ``len(x)``).  A subscript may call ``__missing__`` and any
    other call may change state (``queue.get()``, ``next(it)``, ``df.dropna(inplace=True)``):
    those stay, as statements.
    """
    return inert(node, pure_calls=True)


def inert(node: ast.AST, pure_calls: bool = False) -> bool:
    """A value whose evaluation runs no code: a literal, a name, an attribute, a tuple or a
    sign of those; with ``pure_calls``, also known-pure calls on them with inert arguments."""
    if isinstance(node, ast.Attribute):
        return inert(node.value, pure_calls)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(inert(e, pure_calls) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return inert(node.operand, pure_calls)
    if isinstance(node, ast.Call) and pure_calls:
        if any(k.arg == "inplace" for k in node.keywords):
            return False
        args_inert = all(inert(a) for a in node.args) and all(inert(k.value) for k in node.keywords)
        if isinstance(node.func, ast.Attribute) and node.func.attr in PURE_METHODS:
            return args_inert and inert(node.func.value, pure_calls)
        if isinstance(node.func, ast.Name) and node.func.id in PURE_BUILTINS:
            return args_inert
    return isinstance(node, (ast.Name, ast.Constant))


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


class Groups:
    """Union-find over figure groups; a group is kept once any member is."""

    def __init__(self) -> None:
        self.parent: list[int] = []
        self.kept: set[int] = set()

    def new(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def find(self, group: int) -> int:
        while self.parent[group] != group:
            self.parent[group] = self.parent[self.parent[group]]
            group = self.parent[group]
        return group

    def union(self, a: int, b: int) -> int:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra
            if rb in self.kept:
                self.kept.add(ra)
        return ra

    def keep(self, group: int) -> None:
        self.kept.add(self.find(group))

    def is_kept(self, group: int) -> bool:
        return self.find(group) in self.kept


class ExpressionClassifier:
    """What a name means so far, and the kind of an expression that uses it."""

    def __init__(self) -> None:
        self.roles: dict[str, str] = {}  # name → module role, or "fn:<role>" for functions
        self.objects: dict[str, int] = {}  # name → figure group
        self.images: set[str] = set()
        self.display_functions: set[str] = set()
        self.groups = Groups()
        self.current: int | None = None
        self.function_names: dict[
            str, str
        ] = {}  # ``from seaborn import histplot as h``: h → histplot
        self.rebound: set[str] = set()  # names the notebook binds itself (``display = print``)

    # ------------------------------------------------------------- resolution
    def _chain(self, node: ast.AST) -> tuple[str | None, list[str], int]:
        """Root name, attribute names from the root outward, and how many calls it has."""
        attrs: list[str] = []
        calls = 0
        while True:
            if isinstance(node, ast.Call):
                calls += 1
                node = node.func
            elif isinstance(node, ast.Attribute):
                attrs.append(node.attr)
                node = node.value
            elif isinstance(node, ast.Subscript):
                node = node.value
            elif isinstance(node, ast.Name):
                return node.id, attrs[::-1], calls
            else:
                return None, attrs[::-1], calls

    def _role_of(self, root: str | None, attrs: list[str]) -> str | None:
        """The library ``root`` names (``"fn:"`` + it for an imported function), if any."""
        if root is None:
            return None
        role = self.roles.get(root)
        if role is None and root == "display" and "display" not in self.rebound:
            return "fn:" + rules.IPYTHON_DISPLAY.name  # the notebook's built-in display()
        return role

    def classify_expression(self, node: ast.AST) -> tuple[str, int | None]:
        """(kind, group) of an expression evaluated for its effect or its value."""
        if not isinstance(node, (ast.Call, ast.Attribute, ast.Subscript, ast.Name)):
            return KEEP, None
        root, attrs, calls = self._chain(node)
        if root is None:
            return KEEP, None
        method = attrs[-1] if attrs else root
        if root in self.objects:
            group = self.objects[root]
            if set(attrs) & rules.SAVE_METHODS:
                return SAVE, group
            if method == "show" or not attrs:
                return SHOW, group
            return DRAW, group
        if root in self.images:
            return (SHOW, None) if method in rules.PIL_IMAGE.show and calls else (KEEP, None)
        role = self._role_of(root, attrs)
        if role is not None:
            return self._classify_library(role, root, attrs, calls, node)
        if root in self.display_functions and calls:
            return SHOW, None
        return self._classify_visualiser(attrs, calls)

    def _classify_visualiser(self, attrs: list[str], calls: int) -> tuple[str, int | None]:
        """Any object's own plotting methods: ``df.plot.bar()``, ``x.visualize()``..."""
        if not calls or not attrs:
            return KEEP, None
        drawing = set(attrs) & rules.VISUALISER_ATTRIBUTES or attrs[-1] in rules.VISUALISER_METHODS
        if not drawing:
            return KEEP, None
        if set(attrs) & rules.SAVE_METHODS:  # ``df.plot().get_figure().savefig(...)``
            return SAVE, self._current_group()
        if "style" in attrs:  # a pandas Styler: a rendered table of its own
            return DRAW, self.groups.new()
        return DRAW, self._current_group()

    def _classify_library(
        self, role: str, root: str, attrs: list[str], calls: int, node: ast.AST
    ) -> tuple[str, int | None]:
        """A use of a display library, by the library's table in ``display_rules``."""
        library = rules.BY_NAME[role.removeprefix("fn:")]
        names = [self._function_name(root), *attrs] if role.startswith("fn:") else list(attrs)
        if library is rules.MATPLOTLIB and names[:1] == ["pyplot"]:
            library, names = rules.PYPLOT, names[1:]
        if library is rules.MATPLOTLIB and names[:1] == ["use"]:
            return self._backend(node), None
        if not names:
            return (SHOW if library.bare == SHOW and not calls else KEEP), None
        function = names[0] if library.pick == FIRST else names[-1]
        if not calls:
            return self._bare_use(library, function, attrs)
        if set(names) & library.data:  # ``sns.load_dataset(...)``, ``px.data.iris()``
            return KEEP, None
        if function in library.show or (library.display_prefix and function.startswith("display")):
            return SHOW, None
        if function in library.save:
            return SAVE, self._current_group() if library.pick == FIRST else None
        if function in library.create:
            self.current = self.groups.new()
            return DRAW, self.current
        if function in library.close:
            group = self._current_group()
            self.current = None
            return DRAW, group
        if function in library.style or function.endswith(library.style_suffixes or ("\0",)):
            return STYLE, None
        if library.otherwise == COMPUTE:
            return KEEP, None
        if library.otherwise == DRAW_NEW:
            return DRAW, self.groups.new()
        return DRAW, self._current_group()

    def _bare_use(
        self, library: Library, function: str, attrs: list[str]
    ) -> tuple[str, int | None]:
        """A library name used without a call: ``plt.rcParams``, ``HTML``, ``px.colors``."""
        if library.bare == SHOW:
            return (SHOW if not attrs else KEEP), None
        if function in library.style:
            return STYLE, None
        if library.bare == DRAW_CURRENT:
            return DRAW, self._current_group()
        return library.bare, None

    @staticmethod
    def _backend(node: ast.AST) -> str:
        """``matplotlib.use('Agg')`` stays; a backend that opens windows goes."""
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            return KEEP if str(node.args[0].value).lower() in rules.SAFE_BACKENDS else SHOW
        return SHOW

    def _function_name(self, alias: str) -> str:
        """The real name of an imported function (``from seaborn import histplot as h``)."""
        return self.function_names.get(alias, alias)

    def _current_group(self) -> int:
        if self.current is None:
            self.current = self.groups.new()
        return self.current
