"""What %hpc_resources shows: the request as a table, its #SBATCH lines, the cost and any
problems (as text, and as HTML in Jupyter)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import lazy_module

if TYPE_CHECKING:
    from ..core import cost, jobscript, resources, validation
    from ..core.profiles import ClusterProfile
    from ..core.resources import ResourceRequest
else:  # imported on first use: %load_ext stays cheap (see lazy.py)
    jobscript = lazy_module("hpc_magics.core.jobscript")
    resources = lazy_module("hpc_magics.core.resources")
    cost = lazy_module("hpc_magics.core.cost")


class ResourceView:
    def __init__(self, request: ResourceRequest, profile: ClusterProfile,
                 problems: list[validation.Problem]) -> None:
        self.request, self.profile, self.problems = request, profile, problems
        self.header = jobscript.header_lines(request, profile)
        self.lines = [profile.shebang or jobscript.DEFAULT_SHEBANG, *self.header]
        self.cost = cost.cost_line(request, profile)

    def __repr__(self) -> str:
        rows = resources.as_rows(self.request)
        width = max(len(label) for label, _ in rows)
        text = [f"hpc_magics resources ({self.profile.name}: {self.profile.description})"]
        text += [f"  {label.ljust(width)}  {value}" for label, value in rows]
        text += ["", *self.lines, *([] if self.header else
                                    ["(no #SBATCH lines: the cluster's defaults apply)"]), "",
                 self.cost]
        text += [str(p) for p in self.problems]
        return "\n".join(text)

    def _repr_html_(self) -> str:
        import html

        rows = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
                       f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
                       for k, v in resources.as_rows(self.request))
        preview = html.escape("\n".join(self.lines if self.header else
                                         [*self.lines, "(cluster defaults)"]))
        problems = "".join(
            f"<div style='color:{'#c62828' if p.severity == 'error' else '#ef6c00'}'>"
            f"{html.escape(str(p))}</div>" for p in self.problems)
        return (f"<div class='hpc-magics-resources'><b>{html.escape(self.profile.name)}</b> "
                f"<span>{html.escape(self.profile.description)}</span><table>{rows}</table>"
                f"<pre>{preview}</pre><div><b>{html.escape(self.cost)}</b></div>{problems}</div>")

