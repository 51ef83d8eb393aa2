"""A session: a kernel in a Slurm allocation, driven from the notebook's kernel.

``%hpc_session start NAME`` starts a kernel with the Slurm provisioner, as a launcher's
Slurm kernel starts; ``%%sbatch --session NAME`` runs a cell there: the names it reads are
shipped (again only when their value changed), its output is shown in the notebook, and
the names it assigns come back. Each cell's outputs are also recorded in the session's
folder (``CELLS_DIR``) for the server, which writes them into a notebook nobody has open.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import pickle
import queue
import sys
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from ..core.errors import InvalidRequest, JobFailed
from ..core.resources import ResourceRequest
from ..core.sent_from import CELLS_DIR, SentFrom
from ..jobfolder.files import load_own, write_atomically
from ..jobfolder.live_stream import StreamText
from ..node.session import RESULTS_FILE, SHIPPED_FILE
from .spec import PROVISIONER_NAME, KernelRequest

READY_S = 600.0  # the job may wait in the queue; the provisioner says why meanwhile
LOOK_EVERY_S = 2.0  # a quiet cell: is its job still there? (a cached look, see _still_there)


def _encryption_of_this_ipykernel() -> dict[str, Any]:
    try:
        from ipykernel.kernelspec import get_kernel_dict
    except ImportError:
        return {}
    declared = get_kernel_dict().get("metadata", {}).get("supported_encryption")
    return {"supported_encryption": declared} if declared else {}


def kernel_manager(kernel: KernelRequest, name: str) -> Any:
    """A KernelManager for ipykernel on the node, with the Slurm provisioner."""
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpec

    spec = KernelSpec(
        argv=[kernel.python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        display_name=f"hpc_magics session {name}", language="python",
        resource_dir=f"session-{name}",  # names the job: kernel-session-NAME
        metadata={"kernel_provisioner": {"provisioner_name": PROVISIONER_NAME,
                                         "config": kernel.to_config()},
                  # as this ipykernel's own kernelspec says (7.4 takes CurveZMQ keys)
                  **_encryption_of_this_ipykernel()})
    manager = KernelManager(kernel_name="")
    manager._kernel_spec = spec  # an in-memory kernelspec: nothing installed for a session
    return manager


@dataclass
class Session:
    name: str
    manager: Any
    client: Any
    sent: dict[str, bytes | None] = field(default_factory=dict)  # name → fingerprint
    _handle: Any = field(default=None, repr=False)

    @property
    def job_id(self) -> str:
        return str(self.manager.provisioner.job_id)

    @property
    def folder(self) -> Path:
        return Path(self.manager.provisioner.folder.path)

    @property
    def handle(self) -> Any:
        """The session's job as a job handle (for the job widget)."""
        if self._handle is None:
            from ..backends import get_backend
            from ..handle import JobHandle

            folder = self.manager.provisioner.folder
            self._handle = JobHandle(self.job_id, get_backend("slurm"), folder,
                                     str(folder.meta().get("name", "")))
        return self._handle

    @property
    def host(self) -> str:
        """The compute node the session's kernel runs on ("" before it said)."""
        return str(self.manager.provisioner.folder.meta().get("host") or "")

    @classmethod
    def start(cls, name: str, request: ResourceRequest, python: str,
              jobid: str | None = None, tunnel: str | None = None) -> Session:
        # checked by the provisioner's pre_launch: one line, before anything is submitted
        manager = kernel_manager(KernelRequest(request, python, jobid, tunnel), name)
        manager.start_kernel()
        client = manager.client()
        client.start_channels()
        try:
            client.wait_for_ready(timeout=READY_S)
        except RuntimeError as error:
            client.stop_channels()  # else its sockets reconnect to the dead ports forever
            manager.shutdown_kernel(now=True)
            raise JobFailed(f"session {name}: the kernel did not answer: {error}") from None
        return cls(name, manager, client)

    def _execute(self, code: str, *, shown: StreamText | None = None) -> dict[str, Any]:
        """Run code in the session; with ``shown``, its output is shown in the notebook and
        kept there. While a long cell is quiet, the job is looked at (``_still_there``)."""
        msg_id = self.client.execute(code, store_history=shown is not None, allow_stdin=False)
        while True:  # its output, until the kernel is idle again
            message = self._next(self.client.get_iopub_msg, msg_id)
            if shown is not None:
                _show(message, shown)
            if message["header"]["msg_type"] == "status" and \
                    message["content"]["execution_state"] == "idle":
                break
        content: dict[str, Any] = self._next(self.client.get_shell_msg, msg_id)["content"]
        return content  # then its reply

    def _next(self, get: Any, msg_id: str) -> dict[str, Any]:
        """The next message for ``msg_id`` from a channel, looking at the job while quiet."""
        while True:
            try:
                message: dict[str, Any] = get(timeout=LOOK_EVERY_S)
            except queue.Empty:
                self._still_there()
                continue
            if message["parent_header"].get("msg_id") == msg_id:
                return message

    def _still_there(self) -> None:
        """The kernel's job still runs, as the provisioner sees it (the shared queue view).
        Gone, the session is over: said in one line; ``%hpc_session start`` starts anew."""
        if self.manager.is_alive():
            return
        job_id = self.job_id  # before the shutdown below forgets it
        _SESSIONS.pop(self.name, None)
        with contextlib.suppress(Exception):  # the job is gone: only our side to close
            self.client.stop_channels()
            self.manager.shutdown_kernel(now=True)
        raise JobFailed(f"session {self.name}: its job {job_id} ended (cancelled, or "
                        "its time limit) before the cell finished; its variables are gone: "
                        f"%hpc_session start {self.name} to start a new one")

    def _call(self, function: str, *arguments: Any) -> None:
        # the session kernel's own namespace, from IPython's built-in get_ipython()
        call = (f"from hpc_magics.node.session import {function} as _hpc_session_call\n"
                f"_hpc_session_call(get_ipython().user_ns, *{arguments!r}); "
                "del _hpc_session_call")
        content = self._execute(call)
        if content["status"] != "ok":
            raise JobFailed(f"session {self.name}: {function} failed: "
                            f"{content.get('ename')}: {content.get('evalue')}")

    def ship(self, code: str, namespace: dict[str, Any]) -> list[str]:
        """Ship the names the cell reads that the session lacks or has an older value of."""
        from ..shipping.analysis import CellNames, analyse
        from ..shipping.buffers import write_buffers
        from ..shipping.packing import pack
        from ..shipping.stream import fingerprint

        names = analyse(code)
        changed: dict[str, bytes | None] = {}
        for name in names.free:
            if name in namespace:
                mark = fingerprint(namespace[name])
                if mark is None or self.sent.get(name) != mark:
                    changed[name] = mark
        if not changed:
            return []
        payload = pack(code, CellNames(tuple(changed), names.assigned,
                                       names.has_final_expression), namespace)
        payload = write_buffers(payload, self.folder)
        shipped = list(payload.state_names) + list(payload.modules)
        if not shipped:
            return []
        write_atomically(self.folder / SHIPPED_FILE, pickle.dumps(replace(payload, buffers=())))
        self._call("receive", str(self.folder))
        self.sent.update(changed)
        return shipped

    def pull(self, names: list[str], namespace: dict[str, Any]) -> list[str]:
        """Bring the names a cell assigned back from the session (those that pickle)."""
        from ..shipping.stream import fingerprint

        self._call("send", str(self.folder), names)
        path = self.folder / RESULTS_FILE
        values: dict[str, Any] = load_own(path)
        path.unlink()
        namespace.update(values)
        # the session holds these very values already: not shipped back unless changed
        self.sent.update({name: fingerprint(value) for name, value in values.items()})
        return sorted(values)

    def run(self, code: str, namespace: dict[str, Any], sent: SentFrom | None = None
            ) -> list[str]:
        """Run one cell; the names that came back into ``namespace`` (``sent``: its cell)."""
        from ..shipping.analysis import analyse

        assigned = list(analyse(code).assigned)
        self.ship(code, namespace)
        shown = StreamText(whole="the view of a tab open while it ran (a session keeps no "
                                 "file of a cell's output)")
        # the job's id and folder now: a job that ends under the cell forgets them
        record = partial(self._record, sent, shown, self.job_id, self.folder)
        try:
            content = self._execute(code, shown=shown)
        except JobFailed as error:  # the session's job ended: what the cell showed so far
            record({"status": "error", "ename": "JobFailed", "evalue": str(error),
                    "traceback": [str(error)]})
            raise
        record(content)
        if content["status"] != "ok":
            raise JobFailed(f"the cell failed in session {self.name} (job {self.job_id}): "
                            f"{content.get('ename')}: {content.get('evalue')}",
                            "\n".join(content.get("traceback", [])))
        return self.pull(assigned, namespace) if assigned else []

    def _record(self, sent: SentFrom | None, shown: StreamText, job_id: str, folder: Path,
                reply: dict[str, Any]) -> None:
        """The cell's outputs in ``CELLS_DIR`` (one file a cell, named by when it ended)."""
        if sent is None:  # not a notebook's cell: nowhere to write its outputs
            return
        outputs = shown.outputs()
        if reply["status"] != "ok":
            outputs.append({"output_type": "error", "ename": str(reply.get("ename", "")),
                            "evalue": str(reply.get("evalue", "")),
                            "traceback": list(reply.get("traceback", []))})
        record = {"notebook": sent.notebook, "sent_from": sent.to_meta(), "session": self.name,
                  "job_id": job_id, "state": reply["status"], "ended": time.time(),
                  "outputs": outputs}
        try:
            (folder / CELLS_DIR).mkdir(mode=0o700, exist_ok=True)
            write_atomically(folder / CELLS_DIR / f"{time.time_ns()}.json",
                             json.dumps(record))
        except OSError as error:  # a full disk: the cell's result still comes back
            print(f"[hpc_magics] session {self.name}: this cell's outputs are not kept for "
                  f"the notebook file: {error}", file=sys.stderr)

    def stop(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel()


def _show(message: dict[str, Any], shown: StreamText) -> None:
    """One output message of the session's cell, shown in the notebook and added to ``shown``."""
    kind, content = message["msg_type"], message["content"]
    if kind == "stream":
        name = "stderr" if content.get("name") == "stderr" else "stdout"
        stream = sys.stderr if name == "stderr" else sys.stdout
        stream.write(content.get("text", ""))
        stream.flush()
        shown.add(name, content.get("text", ""))
    elif kind in {"display_data", "execute_result"}:
        from IPython.display import publish_display_data

        data, metadata = content.get("data", {}), content.get("metadata", {})
        publish_display_data(data, metadata)
        shown.add("display", json.dumps({"data": data, "metadata": metadata}))


_SESSIONS: dict[str, Session] = {}


def get(name: str) -> Session:
    try:
        return _SESSIONS[name]
    except KeyError:
        known = ", ".join(sorted(_SESSIONS)) or "none"
        raise InvalidRequest(f"no session {name!r} (started: {known}): %hpc_session start "
                             f"{name} [sbatch options] first") from None


def stop_all() -> None:
    """At the notebook kernel's exit: no session's job outlives it."""
    for name in list(_SESSIONS):
        try:
            stop(name)
        except Exception as error:  # exiting: say it, and go on with the others
            print(f"[hpc_magics] session {name}: {error}", file=sys.stderr)


def start(name: str, request: ResourceRequest, python: str,
          jobid: str | None = None, tunnel: str | None = None) -> Session:
    atexit.unregister(stop_all)  # registered once, however many sessions
    atexit.register(stop_all)
    if name in _SESSIONS:
        raise InvalidRequest(f"session {name!r} runs already (job {_SESSIONS[name].job_id}): "
                             f"%hpc_session stop {name} first")
    session = Session.start(name, request, python, jobid, tunnel)
    _SESSIONS[name] = session
    return session


def stop(name: str) -> str:
    session = _SESSIONS.pop(name, None) or get(name)
    job_id = session.job_id
    session.stop()
    return job_id
