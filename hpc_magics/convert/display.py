"""Remove display code from a notebook's cells, keep its computation.

Decided on the syntax tree of the whole notebook, in two passes:

1. *Classify* every statement in execution order while tracking what names mean: modules
   imported under any alias (``plt``, ``sns``, ``px``, ``alt``, ``IPython.display``,
   ``ipywidgets``), names bound to figures, axes, charts and widgets (``fig, ax =
   plt.subplots()``), and pyplot's current figure.  Figures form *groups*: a figure, its axes
   and artists.  A group is **kept** when its figure is saved (``savefig``, ``write_image``),
   or read by kept computation (``writer.add_figure("loss", fig)``, ``len(ax.lines)``).
2. *Decide*: show statements (``plt.show()``, ``display(df)``, ``fig.show()``, ``interact``,
   a figure or a bare value as a cell's last expression) always go; drawing statements go
   unless their group is kept; assignments from plotting calls that return data
   (``counts, bins, _ = plt.hist(x)``) stay when the data is read by kept code.  A block left
   empty gets ``pass``; a loop or ``if`` whose whole body went, goes; imports of display
   libraries nothing kept uses go (so the job does not need seaborn or plotly installed).

Removed statements are commented out in place (``# [display] plt.show()``) so the script
still reads like the notebook, or deleted.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ._source import SourceEditor, comment_block
from .display_analysis import Analysis, Cell
from .display_expressions import bodies, target_names
from .display_rules import DATA, DRAW, ECHO, IMPORT, SHOW, STYLE


@dataclass
class StripResult:
    """The cells' new sources, and for each cell what was removed (for reports and tests)."""

    sources: list[str]
    removed: list[list[str]] = field(default_factory=list)


# ---------------------------------------------------------------------- pass 2
_MARKERS = {ECHO: "[output]", IMPORT: "[display import]"}  # any other kind: "[display]"


class _Decider:
    def __init__(self, analysis: Analysis, comment_removed: bool) -> None:
        self.analysis = analysis
        self.comment_removed = comment_removed
        self.any_kept = bool(analysis.groups.kept)
        self.kept_reads: set[str] = set()

    def dropped(self, statement: ast.stmt) -> bool:
        """The statement goes entirely (display only, nothing in it computes)."""
        return self.goes(statement) and not self._effects(statement)

    def _effects(self, statement: ast.stmt) -> tuple[ast.expr, ...]:
        record = self.analysis.records.get(id(statement))
        return record.effects if record is not None else ()

    def goes(self, statement: ast.stmt) -> bool:
        """The statement is display; it may still hold computation (``_effects``)."""
        record = self.analysis.records.get(id(statement))
        if record is None:
            return False
        groups = self.analysis.groups
        if record.kind in {SHOW, ECHO}:
            return True
        if record.kind == DRAW:
            if isinstance(statement, (ast.For, ast.AsyncFor)):
                return (
                    self._all_dropped(statement.body)
                    and self._all_dropped(statement.orelse)
                    and self._header_computes_nothing(statement)
                )
            return record.group is None or not groups.is_kept(record.group)
        if record.kind == DATA:
            kept = record.group is not None and groups.is_kept(record.group)
            return not kept and not (set(record.targets) & self.analysis.reads)
        if record.kind == STYLE:
            if isinstance(statement, (ast.With, ast.AsyncWith)):  # its body decides
                return self._all_dropped(statement.body)
            return not self.any_kept
        if record.kind == IMPORT:
            return not (set(record.bound) & self.kept_reads)
        if isinstance(
            statement, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith)
        ):
            return (
                self._all_dropped(statement.body)
                and self._all_dropped(getattr(statement, "orelse", []))
                and self._header_computes_nothing(statement)
            )
        return False

    def _header_computes_nothing(self, statement: ast.stmt) -> bool:
        """A block whose body went goes too, unless its own part computes: a loop's
        iterator or condition that calls something, a loop variable read later."""
        if isinstance(statement, ast.While):
            return False  # its condition runs again and again: it stays
        parts = self.analysis._own_expressions(statement)
        if not all(self.analysis._computes_nothing(part) for part in parts):
            return False
        if isinstance(statement, (ast.For, ast.AsyncFor)):
            return not (set(target_names(statement.target)) & self.analysis.reads)
        return True

    def _all_dropped(self, body: Sequence[ast.stmt]) -> bool:
        return all(self.dropped(s) for s in body)

    def collect_kept_reads(self, trees: Iterable[ast.Module]) -> None:
        for tree in trees:
            self._collect(tree.body)

    def _collect(self, body: Sequence[ast.stmt]) -> None:
        for statement in body:
            record = self.analysis.records.get(id(statement))
            if record is not None and record.kind == IMPORT:
                continue
            if self.dropped(statement):
                continue
            parts = self._effects(statement) if self.goes(statement) else ()
            for part in parts or self.analysis._own_expressions(statement):
                self.kept_reads |= {n.id for n in ast.walk(part) if isinstance(n, ast.Name)}
            for child in bodies(statement):
                self._collect(child)

    def edit(self, editor: SourceEditor, body: Sequence[ast.stmt], removed: list[str]) -> None:
        decisions = [self.dropped(s) for s in body]
        for index, (statement, gone) in enumerate(zip(body, decisions, strict=False)):
            if gone:
                record = self.analysis.records[id(statement)]
                marker = _MARKERS.get(record.kind, "[display]") if self.comment_removed else None
                needs_pass = index == 0 and all(decisions) and not _is_module_body(body)
                editor.remove_statement(statement, marker, pass_if_empty=needs_pass)
                removed.append(ast.get_source_segment(editor.text, statement) or "")
                continue
            if self._effects(statement) and self.goes(statement):
                self._keep_effects(editor, statement, removed)
                continue
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for decorator in statement.decorator_list:
                    if id(decorator) in self.analysis.display_decorators:
                        _remove_decorator(editor, decorator, self.comment_removed)
                        removed.append("@" + (ast.get_source_segment(editor.text, decorator) or ""))
            for child in bodies(statement):
                self.edit(editor, child, removed)

    def _keep_effects(self, editor: SourceEditor, statement: ast.stmt, removed: list[str]) -> None:
        """``display(next(it))`` → ``next(it)``: the display goes, what it computed stays."""
        if not editor.alone_on_lines(statement):
            return  # shares its line with other code: left as written
        source = ast.get_source_segment(editor.text, statement) or ""
        indent = editor.indentation(statement)
        parts = [ast.get_source_segment(editor.text, e) or "" for e in self._effects(statement)]
        if any("\n" in p for p in parts):
            return  # a multi-line argument: left as written rather than re-indented
        text = comment_block(source, indent, "[display]") if self.comment_removed else ""
        text += "".join(f"{indent}{part}\n" for part in parts)
        editor.replace_lines(statement.lineno, statement.end_lineno or statement.lineno, text)
        removed.append(source)


def _is_module_body(body: Sequence[ast.stmt]) -> bool:
    return bool(body) and body[0].col_offset == 0


def _remove_decorator(editor: SourceEditor, decorator: ast.expr, comment: bool) -> None:
    line = editor.line_text(decorator.lineno)
    indent = line[: len(line) - len(line.lstrip())]
    text = f"{indent}# [display] {line.lstrip()}" if comment else ""
    if text and not text.endswith("\n"):
        text += "\n"
    editor.replace_lines(decorator.lineno, decorator.end_lineno or decorator.lineno, text)


def strip_display(
    cells: Sequence[tuple[str, bool]], *, comment_removed: bool = True
) -> StripResult:
    """Strip display code from code cells given as ``(source, keep_all)`` in notebook order.

    ``keep_all`` (the ``hpc-keep`` tag) keeps a cell as it is; its reads still keep the
    figures it uses.  Sources that do not parse are returned unchanged.
    """
    analysis = Analysis()
    parsed: list[Cell] = []
    for source, keep_all in cells:
        try:
            tree: ast.Module | None = ast.parse(source)
        except SyntaxError:
            tree = None
        parsed.append(Cell(source, tree, keep_all))
        if tree is not None:
            analysis.walk_cell(tree, keep_all)
    decider = _Decider(analysis, comment_removed)
    decider.collect_kept_reads(c.tree for c in parsed if c.tree is not None)
    result = StripResult([])
    for cell in parsed:
        removed: list[str] = []
        if cell.tree is None or cell.keep_all:
            result.sources.append(cell.source)
        else:
            editor = SourceEditor(cell.source)
            decider.edit(editor, cell.tree.body, removed)
            result.sources.append(editor.result())
        result.removed.append(removed)
    return result
