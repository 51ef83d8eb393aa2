"""The resource request: one frozen value, built and merged by pure functions."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .errors import InvalidRequest
from .flags import FLAG_FIELDS, SBATCH_FLAGS
from .units import UNLIMITED, format_memory, format_time, parse_memory, parse_time

BACKENDS = ("auto", "slurm", "local")


@dataclass(frozen=True)
class GpuRequest:
    """GPUs per node, optionally typed (``A40:1`` → type ``A40``, count 1)."""

    count: int
    type: str | None = None

    @classmethod
    def parse(cls, text: str, *, flag: str = "--gpus-per-node") -> GpuRequest:
        value = text.strip().strip("'\"")
        if value.lower().startswith("gpu:"):
            value = value[4:]
        parts = value.split(":")
        if len(parts) == 1 and parts[0].isdigit():
            return cls(int(parts[0]))
        if len(parts) == 2 and parts[1].isdigit() and parts[0]:
            return cls(int(parts[1]), parts[0])
        if len(parts) == 1 and re.fullmatch(r"[A-Za-z][\w.-]*", parts[0]):
            return cls(1, parts[0])
        raise InvalidRequest(
            f"{flag} {text!r} is not understood: use a count ('2') or TYPE:COUNT ('A40:1')")

    def __str__(self) -> str:
        return f"{self.type}:{self.count}" if self.type else str(self.count)


@dataclass(frozen=True)
class ResourceRequest:
    """What a job asks the scheduler for. ``None`` means "leave it to the cluster"."""

    partition: str | None = None
    time_s: int | None = None
    nodes: int | None = None
    ntasks_per_node: int | None = None
    cpus_per_task: int | None = None
    mem_mb: int | None = None
    gpus_per_node: GpuRequest | None = None
    gres: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    dependency: str | None = None  # sbatch's --dependency
    setup: tuple[str, ...] = ()
    backend: str = "auto"
    profile: str = "generic"
    extra: tuple[tuple[str, str], ...] = field(default=())

    @property
    def node_count(self) -> int:
        return self.nodes or 1

    def gpus(self) -> GpuRequest | None:
        """The GPUs per node, whether asked through --gpus-per-node or --gres=gpu."""
        if self.gpus_per_node is not None:
            return self.gpus_per_node
        gres = next((item for item in (self.gres or "").split(",") if item.startswith("gpu")), "")
        return GpuRequest.parse(gres, flag="--gres") if gres else None

    def all_gpus(self) -> GpuRequest | None:
        """:meth:`gpus`, or else sbatch's ``--gpus`` total spread over the nodes (rounded up)."""
        total = self.extra_value("gpus", "G")
        if self.gpus() is not None or not total:
            return self.gpus()
        parsed = GpuRequest.parse(total, flag="--gpus")
        return GpuRequest(-(-parsed.count // self.node_count), parsed.type)

    def extra_value(self, *spellings: str) -> str | None:
        """A passed-through flag's value; the last one wins, as in sbatch."""
        return next((text for key, text in reversed(self.extra) if key in spellings), None)

    def node_hours(self) -> float | None:
        if self.time_s is None or self.time_s == UNLIMITED:
            return None
        return self.node_count * self.time_s / 3600

    def changed(self, **updates: Any) -> ResourceRequest:
        return replace(self, **updates)


# What names one site's things: carried to another cluster's profile they would be refused
# (an Alvis account, its A40 type, its module loads), so a profile switch drops them.
SITE_SPECIFIC = (("partition", "-p"), ("account", "-A"), ("qos", "-q"), ("constraint", "-C"),
                 ("gres", "--gres"))


def for_profile(request: ResourceRequest, profile: str,
                given: Mapping[str, Any] | None = None) -> tuple[ResourceRequest, list[str]]:
    """The request moved to another cluster's profile, and what of it was dropped (as flags):
    portable figures (time, nodes, tasks, CPUs, memory, a GPU count) stay. ``given``: the
    values (by field, as ``updated`` takes them) given with the switch: those replace the
    old ones rather than dropping them, so they are not named."""
    if profile == request.profile:
        return request, []
    given = {name: value for name, value in (given or {}).items() if value is not None}
    dropped: list[str] = []
    changes: dict[str, Any] = {"profile": profile}
    for name, flag in SITE_SPECIFIC:
        value = getattr(request, name)
        if value is not None:
            dropped += [] if name in given else [f"{flag} {value}"]
            changes[name] = None
    if request.gpus_per_node is not None and request.gpus_per_node.type:
        if "gpus_per_node" not in given:
            dropped.append(f"the GPU type {request.gpus_per_node.type}")
        changes["gpus_per_node"] = GpuRequest(request.gpus_per_node.count)
    if request.setup:
        again = {_unquote(line) for line in given.get("setup", ())}
        gone = [line for line in request.setup if line not in again]
        dropped += ["--setup " + "; ".join(gone)] if gone else []
        changes["setup"] = ()
    return request.changed(**changes), dropped


def positive_int(name: str, text: Any, why: str = "") -> int:
    try:
        value = int(str(text).strip().strip("'\""))
    except ValueError:
        value = -1
    if value < 1:
        raise InvalidRequest(f"--{name} {text!r} must be a whole number of at least 1{why}")
    return value


def _unquote(text: str) -> str:
    """IPython keeps the quotes of magic arguments: 'module load X' → module load X."""
    text = text.strip()
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"" else text


def check_gres(text: str) -> str:
    """``--gres`` as sbatch takes it (NAME[:TYPE][:COUNT], comma separated), its GPUs read."""
    value = str(text).strip().strip("'\"")
    for item in value.split(","):
        if item.startswith("gpu"):
            GpuRequest.parse(item, flag="--gres")
        elif not re.fullmatch(r"[\w.-]+(:[\w.-]+)*", item):
            raise InvalidRequest(f"{item!r} is not NAME[:TYPE][:COUNT]")
    return value


_TYPED: dict[str, Callable[[str], Any]] = {
    "time_s": parse_time, "mem_mb": parse_memory, "gpus_per_node": GpuRequest.parse,
    "gres": check_gres}


def parse_field(field_name: str, text: str) -> Any:
    """Turn the text of one flag into the typed value of its field."""
    flag = next(k for k, v in FLAG_FIELDS.items() if v == field_name and len(k) > 1)
    if field_name == "gpus_per_node" and GpuRequest.parse(text).count == 0:
        return None  # Slurm reads a count of 0 as no GPUs: a gres of 0 is not rendered
    if field_name in _TYPED:
        return _TYPED[field_name](text)
    if field_name in {"nodes", "ntasks_per_node", "cpus_per_task"}:
        return positive_int(flag, text)
    value = str(text).strip().strip("'\"")
    if not value:
        raise InvalidRequest(f"--{flag} needs a value")
    return value


def updated(request: ResourceRequest, values: Mapping[str, Any]) -> ResourceRequest:
    """Apply raw flag texts (keyed by field name) to a request; ``None`` values are skipped."""
    changes: dict[str, Any] = {}
    for name, raw in values.items():
        if raw is None:
            continue
        if name == "setup":
            # an empty line (--setup "") sets nothing up: it is not kept as one
            lines = (_unquote(line).strip() for line in raw)
            changes["setup"] = tuple(request.setup) + tuple(line for line in lines if line)
        elif name == "backend":
            if raw not in BACKENDS:
                raise InvalidRequest(f"--backend {raw!r}: use one of {', '.join(BACKENDS)}")
            changes["backend"] = raw
        elif name in {f.name for f in fields(ResourceRequest)}:
            changes[name] = raw if not isinstance(raw, str) else parse_field(name, raw)
        else:
            raise InvalidRequest(f"unknown resource {name!r}")
    return replace(request, **changes)


_SBATCH_FORM: dict[str, Callable[[Any], str]] = {
    "time_s": format_time, "mem_mb": lambda mb: format_memory(mb) if mb else "0"}


def sbatch_text(field_name: str, value: Any) -> str:
    """A field's value as an ``#SBATCH`` line spells it."""
    return _SBATCH_FORM.get(field_name, str)(value)


def as_rows(request: ResourceRequest) -> list[tuple[str, str]]:
    """The request as (label, value) rows for a table, in the ``#SBATCH`` header's order;
    unset values say so (an unset dependency is left out)."""
    rows = [("profile", request.profile), ("backend", request.backend)]
    for flag in SBATCH_FLAGS:
        value = getattr(request, flag.field)
        if value is not None or flag.field != "dependency":
            rows.append((flag.name, "(cluster default)" if value is None
                         else "0 (the whole node's memory)" if flag.field == "mem_mb"
                         and value == 0 else sbatch_text(flag.field, value)))
    return [*rows, ("setup", "; ".join(request.setup) if request.setup else "(none)")]


def to_dict(request: ResourceRequest) -> dict[str, Any]:
    """JSON-friendly form (for the job folder and notebook metadata)."""
    data = dataclasses.asdict(request)
    data["gpus_per_node"] = str(request.gpus_per_node) if request.gpus_per_node else None
    data["setup"] = list(request.setup)
    data["extra"] = [list(pair) for pair in request.extra]
    return data


def from_dict(data: Mapping[str, Any]) -> ResourceRequest:
    known = {f.name for f in fields(ResourceRequest)}
    values = {k: v for k, v in data.items() if k in known}
    if values.get("gpus_per_node"):
        values["gpus_per_node"] = GpuRequest.parse(values["gpus_per_node"])
    values["setup"] = tuple(values.get("setup", ()))
    values["extra"] = tuple(tuple(p) for p in values.get("extra", ()))
    return ResourceRequest(**values)
