"""The job widget: the job's story while it waits and runs, and how it used its resources.

PENDING: the reason in plain words and Slurm's estimated start. RUNNING: elapsed against
the time limit as a progress bar, the nodes, the job's memory against its request and its
GPUs' use as live sparklines (``telemetry.py``, from the node's samples) and a live tail of
the log (both read from the job folder; "More" shows more lines). Cancel only while the
job can be cancelled, after a confirmation; Fetch once it has ended; after a failure,
Rerun (with the memory or time the efficiency advice names: "Rerun with 2G"; the new job's
widget comes below, its output live at its foot); an efficiency section (and a GPU plot
when the job recorded GPU samples) after the end. Each part is made when it first has
something to show (a submission pays for the status, the story and Cancel only; see
``parts.Part``).

The monitor (``magics/widget_monitor.py``) keeps it current from the watcher's snapshots;
the widget never decides a state or asks the scheduler itself.
"""

from __future__ import annotations

import contextlib
import html
import os
import threading
import time
from typing import Any

import ipywidgets as widgets
from ipywidgets.widgets.widget_button import ButtonStyle
from ipywidgets.widgets.widget_string import HTMLStyle

from ..core.errors import HpcMagicsError
from ..core.jobs import is_final
from ..fetching import shell_namespace, written_output
from ..handle import JobHandle
from ..jobfacts import suggested_rerun
from .job_view import JobView, segment_note, view_of
from .parts import Part, error_html, shown
from .sweep_view import SweepSection
from .telemetry import telemetry_html

REFRESH_INTERVAL_S = 5.0
TAIL_LINES = 8  # the live tail
MORE_LINES = 200  # "More"
# after the end, how long the widget keeps asking for the job's usage before giving up
USAGE_PATIENCE_S = 300.0

# the widget's children top to bottom, and the buttons' row left to right
ORDER = ("status", "sweep", "story", "progress", "telemetry", "buttons", "confirm", "message",
         "log_view", "efficiency", "gpu_plot", "live", "rerun_widget")
# each button: label, icon, tooltip, the method a click calls, its style
BUTTONS = {
    "cancel_button": ("Cancel", "stop", "scancel this job", "_ask_to_cancel", "danger"),
    "log_button": ("More", "file-text-o", "show more of the job's log", "_toggle_log", ""),
    "fetch_button": ("Fetch", "download", "bring results into the notebook", "_fetch", ""),
    "rerun_button": ("Rerun", "repeat", "submit the cell again, with the same shipped state",
                     "_rerun", ""),
}

_LOOKS: tuple[widgets.Layout, HTMLStyle, ButtonStyle] | None = None


def shared_looks() -> tuple[widgets.Layout, HTMLStyle, ButtonStyle]:
    """The layout of the parts that never hide, the HTML parts' style and the buttons':
    never changed, so one of each for every job widget of this kernel (three models a
    kernel, not three a cell); made again if something closed them (``close_all``)."""
    global _LOOKS
    if _LOOKS is None or any(look.comm is None for look in _LOOKS):
        _LOOKS = (widgets.Layout(), HTMLStyle(), ButtonStyle())
    return _LOOKS


class JobWidget(widgets.VBox):
    progress = Part("progress")
    telemetry = Part("html")
    cancel_button = Part("button")
    log_button = Part("button")
    fetch_button = Part("button")
    rerun_button = Part("button")
    confirm = Part("confirm")
    confirm_text = Part("confirm")
    confirm_yes = Part("confirm")
    confirm_no = Part("confirm")
    message = Part("html")
    log_view = Part("html")
    efficiency = Part("html")
    gpu_plot = Part("gpu_plot")

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self._fixed, self._html_style, self._button_style = shared_looks()
        self._making = threading.RLock()
        self.status, self.story = self._html(), self._html()
        self.log_lines = TAIL_LINES
        self.usage: tuple[Any, ...] | None = None  # the job's figures, once accounting has them
        self.usage_note = ""
        # a FAILED job's state as its steps tell it (accounting's answer, from the monitor)
        self.end_state: str | None = None
        self._ended_at: float | None = None
        self.rerun_changes: dict[str, str] = {}  # what the Rerun button changes
        self.rerun_handle: Any = None  # the job it submitted
        is_sweep = callable(getattr(handle, "poll_targets", None))
        self.sweep = SweepSection(handle) if is_sweep else None
        self._parts: dict[str, widgets.Widget] = {"status": self.status, "story": self.story}
        if self.sweep is not None:
            self._parts["sweep"] = self.sweep
        self._building = True  # parts made while rendering the first time wait for the box
        self.render()
        self._building = False
        super().__init__(self._children(), layout=self._fixed)

    # ------------------------------------------------------------------ parts
    def __repr__(self) -> str:
        # the text/plain of every display (ipywidgets makes it from repr): the default walks
        # every trait of every part, ~3 ms of each submission's CPU, cut at 110 characters
        return f"JobWidget(job {self.handle.job_id})"

    def _html(self) -> widgets.HTML:
        # HTML, not Output: it renders without a kernel's output capture (and tests see it)
        return widgets.HTML(layout=self._fixed, style=self._html_style)

    def _children(self) -> tuple[widgets.Widget, ...]:
        """The parts made so far, in their order (the buttons' row as its buttons)."""
        buttons = [self._parts[name] for name in BUTTONS if name in self._parts]
        row = self._parts.get("buttons")
        if buttons and row is None:
            self._parts["buttons"] = widgets.HBox(buttons, layout=self._fixed)
        elif row is not None and tuple(row.children) != tuple(buttons):
            row.children = buttons
        return tuple(self._parts[name] for name in ORDER if name in self._parts)

    def _place(self) -> None:
        if self._building:
            return
        children = self._children()
        if tuple(self.children) != children:  # type: ignore[has-type]
            self.children = children

    def _show(self, name: str, visible: bool) -> None:
        """Show or hide a part; one never made is hidden already."""
        if visible or name in self._parts:
            shown(getattr(self, name), visible)

    def _set_html(self, name: str, value: str) -> None:
        """Set an HTML part's text; an empty one is not made for it."""
        if value or name in self._parts:
            getattr(self, name).value = value

    def _make_progress(self, name: str) -> dict[str, widgets.Widget]:
        return {name: widgets.FloatProgress(
            min=0.0, max=1.0, description="time used",
            layout=widgets.Layout(width="60%", display="none"))}

    def _make_button(self, name: str) -> dict[str, widgets.Widget]:
        label, icon, tooltip, action, style = BUTTONS[name]
        # made after a render decided it: enabled as that render said
        button = widgets.Button(description=label, icon=icon, tooltip=tooltip,
                                button_style=style, style=self._button_style,
                                layout=widgets.Layout(display="none"),
                                disabled=not getattr(self, "_enabled", {}).get(name, True))
        button.on_click(lambda _: getattr(self, action)())
        return {name: button}

    def _make_confirm(self, name: str) -> dict[str, widgets.Widget]:
        text = self._html()
        yes = widgets.Button(description="Yes, cancel it", button_style="danger",
                             style=self._button_style)
        no = widgets.Button(description="No, keep it", style=self._button_style)
        box = widgets.HBox([text, yes, no], layout=widgets.Layout(display="none"))
        yes.on_click(lambda _: self._cancel())
        no.on_click(lambda _: shown(box, False))
        return {"confirm": box, "confirm_text": text, "confirm_yes": yes, "confirm_no": no}

    def _make_html(self, name: str) -> dict[str, widgets.Widget]:
        return {name: self._html()}

    def _make_gpu_plot(self, name: str) -> dict[str, widgets.Widget]:
        return {name: widgets.Image(format="png", layout=widgets.Layout(display="none"))}

    # ------------------------------------------------------------------ rendering
    def render(self) -> None:
        self.rendered_key = self.key()
        view = view_of(self.handle, self.end_state)
        fraction = view.progress
        self._show("progress", fraction is not None)
        if "progress" in self._parts:
            self.progress.value = fraction or 0.0
        self._set_html("telemetry", telemetry_html(self.handle.folder, self.handle.job_id)
                       if view.phase == "running" and self.sweep is None else "")
        can_fetch = view.can_fetch or self.handle.folder.has_results()
        self._enabled = {"cancel_button": view.can_cancel, "fetch_button": can_fetch}
        for name, enabled in self._enabled.items():
            if name in self._parts:
                self._parts[name].disabled = not enabled
        self._show("cancel_button", view.can_cancel)
        if not view.can_cancel:
            self._show("confirm", False)
        # a sweep's results are the table its section shows
        self._show("fetch_button", can_fetch and self.sweep is None)
        self._render_rerun(view)
        self._render_log()
        self._render_efficiency(view)
        if self.sweep is not None:
            self.sweep.render()
        # the state last: a front end never shows it with the buttons of the state before
        # (each part's change is a message of its own; a Cancel beside COMPLETED was seen)
        self.status.value = view.status_html()
        self.story.value = html.escape(view.story())

    def key(self) -> tuple[Any, ...]:
        """What the widget shows that can change: re-render when this differs."""
        status = self.handle.status
        detail = status.detail
        moving = int(time.time() // REFRESH_INTERVAL_S) if status.phase == "running" else 0
        return (status.state, self.end_state, status.note, self.handle.fetched, moving,
                (detail.reason, detail.start_time, detail.node_list) if detail else None,
                self._log_size(), self.usage is not None, self.usage_note,
                segment_note(self.handle.folder.path),
                self.sweep.key() if self.sweep is not None else ())

    def _log_size(self) -> int:
        size = 0
        for path in self.handle.backend.log_paths(self.handle.job_id, self.handle.folder):
            with contextlib.suppress(OSError):
                size += os.stat(path).st_size
        return size

    def _render_log(self) -> None:
        # the job's own files, also a sweep's (whose log() picks one of its tasks')
        text = JobHandle.log(self.handle, self.log_lines)
        self._show("log_button", bool(text))
        if "log_button" in self._parts:
            self.log_button.description = "Less" if self.log_lines > TAIL_LINES else "More"
        if getattr(self.handle, "live", None) is not None and self.log_lines <= TAIL_LINES:
            text = ""  # the cell's live view shows the output: not twice, the log on More
        self._set_html("log_view", (f"<pre style='max-height:20em;overflow:auto;margin:0'>"
                                    f"{html.escape(text)}</pre>") if text else "")

    def _render_rerun(self, view: JobView) -> None:
        """After a cell's failure, or a sweep's (its failed tasks again; a kernel or a
        notebook job is started again the way it was), Rerun with the change the efficiency
        advice names, from accounting's figures once in."""
        offer = view.phase in {"failed", "ended"} and self.rerun_handle is None \
            and self.handle.folder.meta().get("kind", "cell") in {"cell", "sweep"}
        if offer:
            usage = self.usage[0] if self.usage and len(self.usage) == 1 else None
            self.rerun_changes = suggested_rerun(self.handle.folder, self.handle.job_id,
                                                 view.state, usage)
            label = "Rerun" if self.sweep is None else "Retry failed"
            changes = ", ".join(self.rerun_changes.values())
            self.rerun_button.description = f"{label} with {changes}" if changes else label
        self._show("rerun_button", offer)

    def _render_efficiency(self, view: JobView) -> None:
        if view.phase == "pending" or view.phase == "running" or self.usage is None:
            self._set_html("efficiency", f"<small>{html.escape(self.usage_note)}</small>"
                           if self.usage_note and view.can_fetch else "")
            self._show("gpu_plot", False)
            return
        from .efficiency import gpu_plot_png, report_text, reports

        items = reports(self.handle.folder, self.usage)
        # report_text's lines: the notebook (%hpc_efficiency) and the widget say the same
        self.efficiency.value = (f"<div><b>efficiency</b><pre style='margin:0;white-space:"
                                 f"pre-wrap'>{html.escape(report_text(items))}</pre></div>"
                                 if items else "")
        png = gpu_plot_png(items, f"job {self.handle.job_id}") if len(items) == 1 else None
        if png:
            self.gpu_plot.value = png
        self._show("gpu_plot", bool(png))

    # ------------------------------------------------------------------ monitor's calls
    def refresh(self) -> None:
        self.handle.refresh()
        self.render()

    def wants_usage(self) -> bool:
        """Ended on Slurm, figures not in yet, and still worth asking for."""
        status = self.handle.status
        if self.usage is not None or not status.final or self.handle.backend.name != "slurm":
            return False
        self._ended_at = self._ended_at or time.monotonic()
        if time.monotonic() - self._ended_at > USAGE_PATIENCE_S:
            self.usage_note = "no efficiency figures: accounting never answered"
            return False
        return True

    def wants_end_state(self) -> bool:
        """Ended FAILED or CANCELLED on Slurm, and accounting not asked yet whether a step
        killed for memory ended it, or who cancelled it."""
        status = self.handle.status
        return (self.end_state is None and status.state in {"FAILED", "CANCELLED"}
                and self.handle.backend.name == "slurm")

    def take_usage(self, usage: tuple[Any, ...] | None) -> None:
        if usage is None:
            self.usage_note = "efficiency figures: accounting unreachable for now"
        else:
            self.usage, self.usage_note = usage, ""

    # ------------------------------------------------------------------ actions
    def _run(self, action: Any) -> None:
        self._set_html("message", "")
        try:
            action()
        except HpcMagicsError as error:
            self.message.value = error_html(error)
        self.render()

    def _ask_to_cancel(self) -> None:
        self.confirm_text.value = (f"Cancel job <code>{html.escape(self.handle.job_id)}</code>"
                                   "? Its work so far is lost.")
        shown(self.confirm, True)

    def _cancel(self) -> None:
        shown(self.confirm, False)
        def cancel() -> None:
            # one look after scancel: a button never blocks; the monitor shows the end
            if not is_final(self.handle.cancel(wait_s=0)):
                self._set_html("message", "Cancel sent: Slurm ends the job in a moment.")

        self._run(cancel)

    def _rerun(self) -> None:
        def rerun() -> None:
            new = self.handle.rerun(**self.rerun_changes)
            flags = " ".join(f"--{name} {value}" for name, value in self.rerun_changes.items())
            if new is self.handle:  # a sweep: its failed tasks run again in it
                self.message.value = f"its failed tasks run again {html.escape(flags)}"
                return
            self.message.value = (f"running again as job <code>{html.escape(new.job_id)}"
                                  f"</code> {html.escape(flags)}")
            self.rerun_handle = new
            if new.widget is not None:  # the session made it (and watches it)
                self._parts["rerun_widget"] = new.widget
                self._place()

        self._run(rerun)

    def show_live(self, view: widgets.Widget) -> None:
        """The job's live output (``widgets/live_output.py``) at the widget's foot: a rerun's,
        which has no cell of its own."""
        self._parts["live"] = view
        self._place()

    def _toggle_log(self) -> None:
        self.log_lines = TAIL_LINES if self.log_lines > TAIL_LINES else MORE_LINES
        self._render_log()

    def _fetch(self) -> None:
        def fetch() -> None:
            # a button callback's prints go nowhere visible: show everything in the widget
            values = self.handle.fetch(shell_namespace(), show=False,
                                       results_grace_s=0.5)  # a button never blocks
            names = ", ".join(sorted(n for n in values if n != "_")) or "nothing"
            self.message.value = f"now in the notebook: <code>{html.escape(names)}</code>"
            # once: a live view in the cell has shown it already
            live = getattr(self.handle, "live", None)
            output = "" if live is not None else "".join(
                entry.get("text", "") for entry in written_output(self.handle.folder))
            if output:
                self.message.value += f"<pre>{html.escape(output)}</pre>"

        self._run(fetch)
