"""Remove display code from a notebook's cells, keep its computation.

Decided on the syntax tree of the whole notebook, in two passes (a figure drawn in one cell
may be saved in a later one):

1. *Classify* every statement in execution order while tracking what names mean: modules
   imported under any alias (``plt``, ``sns``, ``px``, ``IPython.display``, ``ipywidgets``),
   names bound to figures, axes, charts and widgets (``fig, ax = plt.subplots()``), and
   pyplot's current figure.  Figures form *groups* (a figure, its axes and artists); a group
   is **kept** when it is saved (``savefig``, ``write_image``) or read by kept computation
   (``writer.add_figure("loss", fig)``, ``len(ax.lines)``).
2. *Decide*: show statements (``plt.show()``, ``display(df)``, a figure or a bare value as a
   cell's last expression) go; drawing goes unless its group is kept; plotting calls that
   return data (``counts, bins, _ = plt.hist(x)``) stay when the data is read; a block left
   empty gets ``pass``; a loop or ``if`` whose whole body went, goes; imports of display
   libraries nothing kept uses go.  What a display call computes stays
   (``display(next(it))`` → ``next(it)``).

Removed statements are commented out in place (``# [display] plt.show()``) or deleted.  The
libraries are data in ``display_rules.py``; nothing here names one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import display_rules as rules
from ._source import SourceEditor, comment_block, parsed
from .cells import RUN_AS_IS, cell_policy
from .display_rules import DATA, DRAW, ECHO, IMPORT, KEEP, SAVE, SHOW, STYLE

_BLOCKS = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_MARKERS = {ECHO: "[output]", IMPORT: "[display import]"}  # any other kind: "[display]"


@dataclass
class _Record:
    kind: str
    group: int | None = None
    names: tuple[str, ...] = ()  # what it binds: an assignment's targets, an import's names
    effects: tuple[ast.expr, ...] = ()  # parts of a display call that compute something


# ---------------------------------------------------------------------- syntax questions
def _library_of(module: str) -> rules.Library | None:
    """The library a module belongs to (its most specific table)."""
    matches = [(len(prefix), library) for library in rules.LIBRARIES for prefix in library.modules
               if module == prefix or module.startswith(prefix + ".")]
    return max(matches, key=lambda m: m[0])[1] if matches else None


def _executed(node: ast.AST) -> list[ast.AST]:
    """``node`` and the nodes inside it that run when it is evaluated (not lambda bodies)."""
    found, pending = [], [node]
    while pending:
        current = pending.pop()
        found.append(current)
        if not isinstance(current, ast.Lambda):
            pending.extend(ast.iter_child_nodes(current))
    return found


def _names(node: ast.AST, context: type[ast.expr_context] = ast.Load) -> set[str]:
    """The names ``node`` reads (with ``ast.Store``: the names an assignment target binds)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, context)}


def _inert(node: ast.AST, pure_calls: bool = False) -> bool:
    """A value whose evaluation runs no code (a literal, name, attribute, tuple, sign); with
    ``pure_calls`` also known-pure inspection calls on those (``df.describe().round(2)``).
    A subscript may call ``__missing__``, any other call may change state: those stay."""
    if isinstance(node, ast.Attribute):
        return _inert(node.value, pure_calls)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_inert(e, pure_calls) for e in node.elts)
    if isinstance(node, ast.UnaryOp):
        return _inert(node.operand, pure_calls)
    if isinstance(node, ast.Call) and pure_calls and all(k.arg != "inplace" for k in node.keywords):
        args_inert = all(_inert(a) for a in [*node.args, *(k.value for k in node.keywords)])
        if isinstance(node.func, ast.Attribute) and node.func.attr in rules.PURE_METHODS:
            return args_inert and _inert(node.func.value, pure_calls)
        if isinstance(node.func, ast.Name) and node.func.id in rules.PURE_BUILTINS:
            return args_inert
    return isinstance(node, (ast.Name, ast.Constant))


def _bodies(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists nested in ``statement`` (if, while, try, with, match, ...)."""
    found = [value for name in ("body", "orelse", "finalbody")
             if isinstance(value := getattr(statement, name, None), list)
             and value and isinstance(value[0], ast.stmt)]
    return found + [h.body for h in getattr(statement, "handlers", [])] + [
        c.body for c in getattr(statement, "cases", [])]


def _chain(node: ast.AST) -> tuple[str | None, list[str], int]:
    """Root name, attribute names from the root outward, and how many calls it has."""
    attrs: list[str] = []
    calls = 0
    while isinstance(node, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            attrs.append(node.attr)
        calls += isinstance(node, ast.Call)
        node = node.func if isinstance(node, ast.Call) else node.value
    return (node.id if isinstance(node, ast.Name) else None), attrs[::-1], calls


# ---------------------------------------------------------------------- pass 1
class _Notebook:
    """What every statement of the notebook is, and (pass 2) what of it goes."""

    def __init__(self) -> None:
        # name → its library, and the function's own name for an imported function
        # (``from seaborn import histplot as h``: ``h`` → seaborn, ``histplot``)
        self.roles: dict[str, tuple[rules.Library, str | None]] = {}
        self.objects: dict[str, int] = {}  # name → figure group
        self.data_names: dict[str, int] = {}  # ``counts`` of ``counts, bins, _ = plt.hist(x)``
        self.display_functions: set[str] = set()
        self.rebound: set[str] = set()  # names the notebook binds itself (``display = print``)
        self.parent: list[int] = []  # figure groups, union-find; a group is kept once any is
        self.kept: set[int] = set()
        self.current: int | None = None  # pyplot's current figure
        self.records: dict[int, _Record] = {}
        self.reads: set[str] = set()  # names read by computation
        self.display_decorators: set[int] = set()  # ``@interact``: ids of decorator nodes
        self.kept_reads: set[str] = set()  # names read by what the script keeps (pass 2)

    # ------------------------------------------------------------- figure groups
    def _new(self) -> int:
        self.parent.append(len(self.parent))
        return len(self.parent) - 1

    def _find(self, group: int) -> int:
        while self.parent[group] != group:
            group = self.parent[group]
        return group

    def _union(self, a: int, b: int) -> None:
        ra, rb = self._find(a), self._find(b)
        self.parent[rb] = ra
        if rb in self.kept:
            self.kept.add(ra)

    def _keep(self, group: int) -> None:
        self.kept.add(self._find(group))

    def _is_kept(self, group: int | None) -> bool:
        return group is not None and self._find(group) in self.kept

    def _current_group(self) -> int:
        if self.current is None:
            self.current = self._new()
        return self.current

    # ------------------------------------------------------------- one expression
    def _role_of(self, root: str | None) -> tuple[rules.Library, str | None] | None:
        """The library ``root`` names (and the function it is), if any."""
        if root == "display" and root not in self.roles and root not in self.rebound:
            return rules.IPYTHON_DISPLAY, "display"  # the notebook's built-in display()
        return self.roles.get(root) if root is not None else None

    def classify(self, node: ast.AST) -> tuple[str, int | None]:
        """(kind, group) of an expression evaluated for its effect or its value."""
        root, attrs, calls = _chain(node)
        if root is None:  # not a chain of names, attributes and calls
            return KEEP, None
        if root in self.objects:
            group = self.objects[root]
            if set(attrs) & rules.SAVE_METHODS:
                return SAVE, group
            return (SHOW if attrs[-1:] in ([], ["show"]) else DRAW), group
        role = self._role_of(root)
        if role is not None:
            return self._classify_library(*role, attrs, calls, node)
        if root in self.display_functions and calls:
            return SHOW, None
        # any object's own plotting methods: ``df.plot.bar()``, ``x.visualize()``...
        if not calls or not attrs or not (set(attrs) & rules.VISUALISER_ATTRIBUTES
                                          or attrs[-1] in rules.VISUALISER_METHODS):
            return KEEP, None
        if attrs[-1] in rules.SHOW_METHODS:  # ``img.show()``, Spark's ``df.show()``
            return SHOW, None
        if set(attrs) & rules.SAVE_METHODS:  # ``df.plot().get_figure().savefig(...)``
            return SAVE, self._current_group()
        if "style" in attrs:  # a pandas Styler: a rendered table of its own
            return DRAW, self._new()
        return DRAW, self._current_group()

    def _classify_library(self, library: rules.Library, function_name: str | None,
                          attrs: list[str], calls: int, node: ast.AST) -> tuple[str, int | None]:
        """A use of a display library, by the library's table in ``display_rules``."""
        names = [function_name, *attrs] if function_name else list(attrs)
        if library is rules.MATPLOTLIB and names[:1] == ["pyplot"]:
            library, names = rules.PYPLOT, names[1:]
        if library is rules.MATPLOTLIB and names[:1] == ["use"]:
            # ``matplotlib.use('Agg')`` stays; a backend that opens windows goes
            backend = node.args[0] if isinstance(node, ast.Call) and node.args else None
            safe = isinstance(backend, ast.Constant) and \
                str(backend.value).lower() in rules.SAFE_BACKENDS
            return (KEEP if safe else SHOW), None
        if not names:
            return (SHOW if library.bare == SHOW and not calls else KEEP), None
        function = names[0] if library.pick == rules.FIRST else names[-1]
        if not calls:  # ``plt.rcParams``, ``HTML``, ``px.colors``
            if library.bare == SHOW:
                return (SHOW if not attrs else KEEP), None
            if function in library.style:
                return STYLE, None
            if library.bare == rules.DRAW_CURRENT:
                return DRAW, self._current_group()
            return library.bare, None
        if set(names) & library.data:  # ``sns.load_dataset(...)``, ``px.data.iris()``
            return KEEP, None
        if function in library.show or (library.display_prefix and function.startswith("display")):
            return SHOW, None
        if function in library.save:
            return SAVE, self._current_group() if library.pick == rules.FIRST else None
        if function in library.create:
            self.current = self._new()
            return DRAW, self.current
        if function in library.close:
            group = self._current_group()
            self.current = None
            return DRAW, group
        if function in library.style:
            return STYLE, None
        if library.otherwise == rules.COMPUTE:
            return KEEP, None
        return DRAW, self._new() if library.otherwise == rules.DRAW_NEW else self._current_group()

    # ------------------------------------------------------------- statements
    def walk_body(self, body: Sequence[ast.stmt], keep_all: bool,
                  last_is_echo: bool = False) -> None:
        for index, statement in enumerate(body):
            record = self._statement(statement, keep_all, last_is_echo and index == len(body) - 1)
            if keep_all and record.kind != IMPORT:
                record = _Record(KEEP)
            self.records[id(statement)] = record
            if record.kind == KEEP:
                self._read(self._own_expressions(statement))

    def _walk_new(self, bodies: Sequence[Sequence[ast.stmt]], keep_all: bool) -> list[_Record]:
        """Walk ``bodies``; the records of the statements in them, nested ones too."""
        before = set(self.records)
        for body in bodies:
            self.walk_body(body, keep_all)
        return [r for k, r in self.records.items() if k not in before]

    def _read(self, nodes: Iterable[ast.AST]) -> None:
        """Computation reads these expressions: any figure they touch must be kept."""
        for node in nodes:
            for name in _names(node):
                self.reads.add(name)
                if name in self.objects:
                    self._keep(self.objects[name])

    def _own_expressions(self, statement: ast.stmt) -> list[ast.AST]:
        """The parts of a statement outside its nested bodies."""
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            return [statement.iter]
        if isinstance(statement, (ast.While, ast.If)):
            return [statement.test]
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            return [item.context_expr for item in statement.items]
        if isinstance(statement, _DEFINITIONS):
            return [d for d in statement.decorator_list if id(d) not in self.display_decorators]
        if isinstance(statement, ast.Try):
            return [h.type for h in statement.handlers if h.type is not None]
        return [statement]

    def _statement(self, node: ast.stmt, keep_all: bool, last: bool) -> _Record:
        """What one statement is; nested bodies are walked (and recorded) on the way."""
        if isinstance(node, _DEFINITIONS) and not keep_all:
            self.display_decorators |= {id(d) for d in node.decorator_list
                                        if self.classify(d)[0] == SHOW}
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            return self._import(node)
        if isinstance(node, ast.Expr):
            kind, group = self.classify(node.value)
            if kind == KEEP and last and _inert(node.value, pure_calls=True):
                return _Record(ECHO)  # a value the cell ended with only to show it
            if kind == SAVE:
                self._read([node.value])  # ``pio.write_image(fig, ...)`` keeps ``fig``
                if group is not None:
                    self._keep(group)
            if kind == DRAW and group is not None:
                self._join(node.value, group)
            effects = self._effects(node.value) if kind in {SHOW, DRAW} else ()
            return _Record(kind, group, effects=effects)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            return self._assignment(node)
        if isinstance(node, (ast.For, ast.AsyncFor)):
            return self._loop(node, keep_all)
        if isinstance(node, (ast.With, ast.AsyncWith)):
            kinds = [self.classify(item.context_expr)[0] for item in node.items]
            self.walk_body(node.body, keep_all)
            return _Record(STYLE if all(k in {STYLE, DRAW} for k in kinds) else KEEP)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return self._function(node, keep_all)
        for body in _bodies(node):  # if, while, try, class, match: their bodies decide
            self.walk_body(body, keep_all)
        return _Record(KEEP)

    def _effects(self, node: ast.expr) -> tuple[ast.expr, ...]:
        """Arguments of a display call that compute something: ``display(next(it))``."""
        found = [value for call in _executed(node) if isinstance(call, ast.Call)
                 for argument in [*call.args, *(k.value for k in call.keywords)]
                 if not self._computes_nothing(
                     value := argument.value if isinstance(argument, ast.Starred) else argument)]
        # an argument nested in another one that is kept anyway: keep the outer one only
        return tuple(a for a in found if not any(a is not b and a in _executed(b) for b in found))

    def _computes_nothing(self, node: ast.AST) -> bool:
        return not any(isinstance(child, (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await))
                       or (isinstance(child, ast.Call) and not self._pure_or_display_call(child))
                       for child in _executed(node))

    def _pure_or_display_call(self, call: ast.Call) -> bool:
        function = call.func
        if isinstance(function, ast.Attribute) and function.attr in rules.PURE_FUNCTIONS:
            return True
        if isinstance(function, ast.Name) and function.id in rules.PURE_BUILTINS | \
                rules.PURE_FUNCTIONS:
            return True
        root = _chain(call)[0]
        return root is not None and (root in self.objects or root in
                                     self.display_functions or self._role_of(root) is not None)

    def _loop(self, node: ast.For | ast.AsyncFor, keep_all: bool) -> _Record:
        """A loop over axes or figures draws; it stays (with its figure) if it computes too."""
        kind, group = self.classify(node.iter)
        iter_names = _names(node.iter)
        if kind != DRAW and not (iter_names & set(self.objects)):
            self._forget(_names(node.target, ast.Store))
            self.walk_body(node.body, keep_all)
            self.walk_body(node.orelse, keep_all)
            return _Record(KEEP)
        if group is None:
            group = next(self.objects[n] for n in iter_names if n in self.objects)
        for name in _names(node.target, ast.Store):
            if self._derived_from_display(node, name):
                self.objects[name] = group
        inner = self._walk_new([node.body, node.orelse], keep_all)
        if any(r.kind == KEEP or r.effects for r in inner):
            self._keep(group)  # the loop stays for its computation: so do its axes
        return _Record(DRAW, group)

    def _derived_from_display(self, loop: ast.For | ast.AsyncFor, name: str) -> bool:
        """In ``for ax, img in zip(axes.flat, images)`` only ``ax`` is a figure part."""
        iterator, target = loop.iter, loop.target
        if not (isinstance(iterator, ast.Call) and isinstance(iterator.func, ast.Name)
                and isinstance(target, (ast.Tuple, ast.List))):
            return True
        if iterator.func.id == "zip" and len(iterator.args) == len(target.elts):
            for argument, element in zip(iterator.args, target.elts, strict=False):
                if name in _names(element, ast.Store):
                    return bool(_names(argument) & set(self.objects)) or \
                        self.classify(argument)[0] == DRAW
        if iterator.func.id == "enumerate" and len(target.elts) == 2:
            return name in _names(target.elts[1], ast.Store)
        return True

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, keep_all: bool) -> _Record:
        """A function whose every statement displays is a display function: calls to it go."""
        saved, self.current = self.current, None
        self._forget([node.name])
        inner = self._walk_new([node.body], keep_all)
        self.current = saved
        kinds = {r.kind for r in inner} | ({KEEP} if any(r.effects for r in inner) else set())
        if kinds <= {SHOW, DRAW, STYLE, ECHO}:  # a docstring or ``pass`` is KEEP
            self.display_functions.add(node.name)
        else:  # a function of the same name defined inside it may have said otherwise
            self.display_functions.discard(node.name)
        return _Record(KEEP)

    def _join(self, expression: ast.AST, group: int) -> None:
        """Figures a drawing call mentions belong together (``fig.colorbar(im, ax=ax)``)."""
        for name in _names(expression):
            if name in self.objects or name in self.data_names:
                self._union(group, self.objects.get(name, self.data_names.get(name, group)))

    def _assignment(self, node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> _Record:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = tuple(n for t in targets for n in _names(t, ast.Store))
        value = node.value
        # into a figure or a display module: ``ax.title.text = ...``, ``plt.rcParams[..] = ..``
        for target in targets:
            if isinstance(target, (ast.Attribute, ast.Subscript)):
                root = _chain(target)[0]
                if root in self.objects:
                    if value is not None:
                        self._join(value, self.objects[root])
                    return _Record(DRAW, self.objects[root])
                role = self._role_of(root)
                if role is not None and role[0].settings:
                    return _Record(STYLE)
        if value is None:
            return _Record(KEEP)
        kind, group = self.classify(value)
        if kind in {DRAW, SHOW} and isinstance(value, ast.Call):
            root, attrs, _ = _chain(value)
            role = self._role_of(root)
            function = attrs[-1] if attrs else (role[1] if role else None)
            matplotlib = root in self.objects or (role is not None and role[0] in {
                rules.PYPLOT, rules.MATPLOTLIB})
            group = group if group is not None else self._new()
            self._join(value, group)
            if function in rules.PYPLOT.data_returning and matplotlib:
                self._forget(names)
                self.data_names.update(dict.fromkeys(names, group))
                return _Record(DATA, group, names, effects=self._effects(value))
            for name in names:
                self.objects[name] = group
            return _Record(DRAW, group, names, effects=self._effects(value))
        if kind == STYLE:
            return _Record(STYLE)
        self._forget(names)
        return _Record(KEEP)

    def _forget(self, names: Iterable[str]) -> None:
        for name in names:
            self.rebound.add(name)
            for meaning in (self.objects, self.data_names, self.roles):
                meaning.pop(name, None)
            self.display_functions.discard(name)

    def _import(self, node: ast.Import | ast.ImportFrom) -> _Record:
        bound: list[str] = []
        display_only = True
        for alias in node.names:
            function: str | None = None
            if isinstance(node, ast.Import):
                name = alias.asname or alias.name.split(".")[0]
                library = _library_of(alias.name if alias.asname else name)
            else:
                name = alias.asname or alias.name
                library = _library_of(f"{node.module or ''}.{alias.name}")
                module_library = _library_of(node.module or "")
                if library is None or library is module_library:  # not a submodule: a function
                    library, function = module_library, alias.name
            self._forget([name])
            display_only &= library is not None
            if library is not None:
                self.roles[name] = library, function
            bound.append(name)
        return _Record(IMPORT if display_only else KEEP, names=tuple(bound))

    # ---------------------------------------------------------------------- pass 2
    def _goes(self, statement: ast.stmt) -> bool:
        """The statement is display; it may still hold computation (its effects)."""
        record = self.records[id(statement)]
        if record.kind in {SHOW, ECHO}:
            return True
        if record.kind == DRAW:
            if isinstance(statement, (ast.For, ast.AsyncFor)):
                return self._block_goes(statement)
            return not self._is_kept(record.group)
        if record.kind == DATA:
            return not self._is_kept(record.group) and not (set(record.names) & self.reads)
        if record.kind == STYLE:
            if isinstance(statement, (ast.With, ast.AsyncWith)):  # its body decides
                return self._all_dropped(statement.body)
            return not self.kept
        if record.kind == IMPORT:
            return not (set(record.names) & self.kept_reads)
        return isinstance(statement, _BLOCKS) and self._block_goes(statement)

    def _block_goes(self, statement: ast.stmt) -> bool:
        """A block whose body went goes too, unless its own part computes: a loop's
        iterator or condition that calls something, a loop variable read later."""
        if isinstance(statement, ast.While):
            return False  # its condition runs again and again: it stays
        if isinstance(statement, (ast.For, ast.AsyncFor)) and \
                _names(statement.target, ast.Store) & self.reads:
            return False
        return self._all_dropped(getattr(statement, "body", [])) and \
            self._all_dropped(getattr(statement, "orelse", [])) and \
            all(self._computes_nothing(p) for p in self._own_expressions(statement))

    def _dropped(self, statement: ast.stmt) -> bool:
        """The statement goes entirely (display only, nothing in it computes)."""
        return self._goes(statement) and not self.records[id(statement)].effects

    def _all_dropped(self, body: Sequence[ast.stmt]) -> bool:
        return all(self._dropped(s) for s in body)

    def collect_kept_reads(self, body: Sequence[ast.stmt]) -> None:
        for statement in body:
            record = self.records[id(statement)]
            if record.kind == IMPORT or self._dropped(statement):
                continue
            parts = record.effects if self._goes(statement) else ()
            for part in parts or self._own_expressions(statement):
                self.kept_reads |= {n.id for n in ast.walk(part) if isinstance(n, ast.Name)}
            for child in _bodies(statement):
                self.collect_kept_reads(child)

    def edit(self, editor: SourceEditor, body: Sequence[ast.stmt], removed: list[str],
             comment: bool) -> None:
        decisions = [self._dropped(s) for s in body]
        for index, (statement, gone) in enumerate(zip(body, decisions, strict=False)):
            if gone:
                kind = self.records[id(statement)].kind
                marker = _MARKERS.get(kind, "[display]") if comment else None
                needs_pass = index == 0 and all(decisions) and body[0].col_offset != 0
                editor.remove_statement(statement, marker, pass_if_empty=needs_pass)
                removed.append(ast.get_source_segment(editor.text, statement) or "")
            elif self.records[id(statement)].effects and self._goes(statement):
                self._keep_effects(editor, statement, removed, comment)
            else:
                for decorator in getattr(statement, "decorator_list", []):
                    if id(decorator) in self.display_decorators:
                        line = editor.line_text(decorator.lineno)
                        editor.replace_lines(
                            decorator.lineno, decorator.end_lineno or decorator.lineno,
                            comment_block(line, editor.indentation(decorator), "[display]")
                            if comment else "")
                        removed.append(f"@{ast.get_source_segment(editor.text, decorator) or ''}")
                for child in _bodies(statement):
                    self.edit(editor, child, removed, comment)

    def _keep_effects(self, editor: SourceEditor, statement: ast.stmt, removed: list[str],
                      comment: bool) -> None:
        """``display(next(it))`` → ``next(it)``: the display goes, what it computed stays."""
        parts = [ast.get_source_segment(editor.text, e) or ""
                 for e in self.records[id(statement)].effects]
        if not editor.alone_on_lines(statement) or any("\n" in p for p in parts):
            return  # shares its line, or a multi-line argument: left as written
        indent = editor.indentation(statement)
        editor.remove_statement(statement, "[display]" if comment else None,
                                then="".join(f"{indent}{part}\n" for part in parts))
        removed.append(ast.get_source_segment(editor.text, statement) or "")


def strip_cells(cells: Sequence[MutableMapping[str, Any]], comment_removed: bool = True
                ) -> list[list[str]]:
    """Strip display code from the code cells (dicts, changed in place); what went, per cell.

    An ``hpc-keep`` cell stays as it is; its reads still keep the figures it uses.  A cell
    that does not parse is left as it is.
    """
    code = [(c, cell_policy(c) == RUN_AS_IS, parsed(c["source"]))
            for c in cells if c.get("cell_type") == "code"]
    notebook = _Notebook()
    for _, keep_all, tree in code:
        if tree is not None:
            notebook.walk_body(tree.body, keep_all, last_is_echo=True)
            notebook.current = None  # the inline backend closes the cell's figures
    for _, _, tree in code:
        if tree is not None:
            notebook.collect_kept_reads(tree.body)
    removed_per_cell: list[list[str]] = []
    for cell, keep_all, tree in code:
        removed: list[str] = []
        if tree is not None and not keep_all:
            editor = SourceEditor(cell["source"])
            notebook.edit(editor, tree.body, removed, comment_removed)
            cell["source"] = editor.result()
        removed_per_cell.append(removed)
    return removed_per_cell
