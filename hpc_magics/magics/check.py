"""``%%hpc_resources --check``: a pasted job script checked line by line (``core/checkscript``)."""

from __future__ import annotations

import html

from ..core.checkscript import ERROR, WARNING, ScriptReport, check_script, render
from ..core.profiles import load_profile

_COLOURS = {ERROR: "#c62828", WARNING: "#ef6c00", "ignored": "#757575", "passed": "#1565c0"}


class CheckView:
    """The checker's report: text for terminals, a coloured table in notebooks."""

    def __init__(self, report: ScriptReport, live: str = "") -> None:
        self.report, self.live = report, live

    def __repr__(self) -> str:
        return "\n".join(filter(None, (render(self.report, "cell"), self.live)))

    def _repr_html_(self) -> str:
        rows = []
        for line in self.report.lines:
            colour = _COLOURS.get(line.verdict, "#2e7d32")
            notes = "<br>".join(html.escape(n) for n in line.notes)
            rows.append(f"<tr><td>{line.number}</td><td style='color:{colour}'><b>"
                        f"{line.verdict}</b></td><td><code>{html.escape(line.text)}</code>"
                        f"<div style='color:{colour}'>{notes}</div></td></tr>")
        general = "".join(f"<div>{html.escape(str(f))}</div>"
                          for f in self.report.findings if f.line is None)
        summary = render(self.report).splitlines()[-1]
        live = f"<pre>{html.escape(self.live)}</pre>" if self.live else ""
        return (f"<div class='hpc-magics-check'><b>profile {html.escape(self.report.profile)}"
                f"</b><table>{''.join(rows)}</table>{general}<b>{html.escape(summary)}</b>"
                f"{live}</div>")


def check_view(script: str, profile_name: str) -> CheckView:
    """The block checked against the profile; against Slurm too when this is its cluster."""
    from ..scheduler.live import with_live

    report = check_script(script, load_profile(profile_name))
    return CheckView(*with_live(report, script))
