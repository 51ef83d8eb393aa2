"""One task of a cell's job on the node: its rank, checkpoint, staged data and signals.

``NodeTask.prepare`` exports the ``torch.distributed`` variables, puts ``rank``,
``local_rank``, ``world_size`` (with the options ``resumed``, ``staged``, ``stage_dir``,
``stage_out``) into the cell's namespace, restores a checkpoint and installs the handlers.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import time
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.scale import ScaleOptions
from ..jobfolder.files import (
    CHECKPOINT_FILE,
    GATHER_DIR,
    REQUEUED_AT,
    SEGMENT_FILE,
    load_own,
    read_segment,
    write_atomically,
)

# rank 0 starts with the others (srun): a bound on the wait for its port, not an expected wait
PORT_WAIT_S = 600.0


class Requeued(BaseException):
    """Unwinds the cell after its checkpoint was saved and the job requeued (not an error)."""


def _dumps(value: Any) -> bytes:
    import cloudpickle  # notebook classes and functions travel by value

    return bytes(cloudpickle.dumps(value))


def _master_addr(hostname: str, environ: Mapping[str, str]) -> str:
    """The first node's name when it resolves, else the address srun launched from (the
    batch host, the first node): node names that only Slurm knows still work."""
    try:
        socket.gethostbyname(hostname)
        return hostname
    except OSError:
        return environ.get("SLURM_LAUNCH_NODE_IPADDR", hostname)


def export_distributed(folder: Path) -> None:
    """MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE for
    ``init_process_group("env://")``, unless already set. The port is one rank 0 found
    free on its node, not submitit's guess from the job id (it may be taken there): rank 0
    writes it into the job folder, the other ranks wait for the file. One file per job and
    segment: a requeued job meets anew."""
    env = os.environ
    if "SLURM_JOB_ID" not in env or "SLURM_PROCID" not in env:
        return
    from submitit.helpers import TorchDistributedEnvironment

    try:
        dist = TorchDistributedEnvironment()
    except Exception:  # not submitit's Slurm environment (another engine ran the cell)
        return
    values = {"MASTER_ADDR": _master_addr(dist.master_addr, env), "RANK": str(dist.rank),
              "WORLD_SIZE": str(dist.world_size), "LOCAL_RANK": str(dist.local_rank),
              "LOCAL_WORLD_SIZE": str(dist.local_world_size)}
    if "MASTER_PORT" not in env:
        meeting = folder / (f"master-port-{env['SLURM_JOB_ID']}-"
                            f"{env.get('SLURM_RESTART_COUNT', '0')}.txt")
        if dist.rank == 0:
            port = _free_port()
            if dist.world_size > 1:  # others to tell
                write_atomically(meeting, f"{port}\n".encode())
        else:
            port = _wait_for_port(meeting)
        values["MASTER_PORT"] = str(port)
    for key, value in values.items():
        env.setdefault(key, value)


def _free_port() -> int:
    """A port no one listens on here now (the kernel's pick among the free ones)."""
    with socket.socket() as probe:
        probe.bind(("", 0))
        return int(probe.getsockname()[1])


def _wait_for_port(path: Path, wait_s: float = PORT_WAIT_S) -> int:
    """Any rank but 0: rank 0's port, once written (polled with back-off)."""
    deadline = time.monotonic() + wait_s
    pause = 0.05
    while True:
        try:
            return int(path.read_text().strip())
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                raise RuntimeError(f"rank 0 never wrote its port to {path} in {wait_s:.0f} s: "
                                   "did it start? (its log says)") from None
        time.sleep(pause)
        pause = min(pause * 2, 1.0)


class NodeTask:
    """This task's part of the job, between the rebuilt namespace and the results."""

    def __init__(self, folder: Path, options: ScaleOptions | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.folder = folder
        self.options = options or ScaleOptions()
        self.rank = int(env.get("SLURM_PROCID", "0"))
        self.local_rank = int(env.get("SLURM_LOCALID", "0"))
        self.world_size = int(env.get("SLURM_NTASKS", "1"))
        self.segment = int(env.get("SLURM_RESTART_COUNT", "0"))  # requeues so far
        self.job_id = env.get("SLURM_JOB_ID", "")
        self.namespace: dict[str, Any] = {}
        self.cell_running = False
        self.term_waiting = False  # a SIGTERM came while the results were written
        self.resumed = False

    @property
    def lead(self) -> bool:
        return self.rank == 0

    def prepare(self, namespace: dict[str, Any]) -> None:
        global _CURRENT, resumed
        _CURRENT = self
        self.namespace = namespace
        export_distributed(self.folder)
        for name, value in (("rank", self.rank), ("local_rank", self.local_rank),
                            ("world_size", self.world_size)):
            if self.world_size > 1 or name not in namespace:  # a notebook's own name wins
                namespace[name] = value     # only in a one-task job
        opts = self.options
        if opts.checkpoint:
            self.resumed = self._restore(namespace)
            namespace["resumed"] = self.resumed
            if self.lead:  # what the widget shows ("segment 2 of ≤4"), without asking Slurm
                self._note_segment(segment=self.segment + 1, of_at_most=opts.chain + 1,
                                   started_at=time.time())
            resumed = self.resumed
            self._install_handlers()
        if opts.stage or opts.stage_back:
            from . import staging

            root = staging.private_dir(staging.local_root())
            namespace["stage_dir"] = str(root)
            namespace["staged"] = staging.staged_paths(opts.stage, root)
            namespace["stage_out"] = str(staging.private_dir(root / staging.OUT_DIR))

    def _restore(self, namespace: dict[str, Any]) -> bool:
        path = self.folder / CHECKPOINT_FILE
        if not path.exists():
            return False
        saved = load_own(path)
        namespace.update(saved["values"])
        _say(f"resumed from the checkpoint of segment {saved['segment'] + 1} "
             f"({', '.join(saved['values']) or 'nothing'}): segment {self.segment + 1}")
        return True

    def save_checkpoint(self) -> Path | None:
        """The named variables as they are now, in one pickle (atomic); rank 0 only.
        Names not defined yet keep their value from the previous checkpoint."""
        if not self.lead or not self.options.checkpoint:
            return None
        path = self.folder / CHECKPOINT_FILE
        values = {name: self.namespace[name] for name in self.options.checkpoint
                  if name in self.namespace}
        if not values:
            return path if path.exists() else None
        if path.exists() and len(values) < len(self.options.checkpoint):
            values = {**load_own(path)["values"], **values}
        write_atomically(path, _dumps({"values": values, "segment": self.segment,
                                        "saved_at": time.time()}), durable=True)
        return path

    def _install_handlers(self) -> None:
        signal.signal(signal.SIGUSR2, self._on_limit)
        signal.signal(signal.SIGTERM, self._on_term)
        # Slurm sends SIGCONT with every kill: submitit's handler only logs it (noise here)
        signal.signal(signal.SIGCONT, signal.SIG_DFL)

    def _on_limit(self, signum: int, frame: types.FrameType | None) -> None:
        """USR2 before the time limit (or a site's preemption notice)."""
        if not self.lead or not self.cell_running:  # rank 0 requeues the whole job
            return
        path = self.save_checkpoint()
        if self.segment >= self.options.chain:
            _say(f"time limit near: checkpoint saved to {path}; no requeue left "
                 f"(--chain {self.options.chain} used up)")
            return
        # said first: the requeue stops every process of the job, the log's copier too
        _say(f"time limit near: checkpoint saved to {path}; requeueing (segment "
             f"{self.segment + 2} of at most {self.options.chain + 1})")
        self.note_requeue()
        from ..scheduler import commands

        result = commands.run(["scontrol", "requeue", self.job_id], timeout=60)
        if not result.ok:
            _say(f"scontrol requeue failed: {result.first_error_line()}; the cell goes on")
            return
        raise Requeued

    def cell_finished(self) -> None:
        """The cell is over. A time-limit warning (USR1/USR2) finds nothing left to save:
        ignored from now on (Slurm may send it while this process exits, when the default
        action kills: a finished job ended FAILED). A SIGTERM (a cancel, the time limit)
        waits until the results are whole (``results_written``)."""
        self.cell_running = False
        if threading.current_thread() is threading.main_thread():
            for name in ("SIGUSR1", "SIGUSR2"):
                signal.signal(getattr(signal, name), signal.SIG_IGN)
            signal.signal(signal.SIGTERM, self._term_after_results)

    def _term_after_results(self, signum: int, frame: types.FrameType | None) -> None:
        self.term_waiting = True
        _say("SIGTERM while the results are written: the job ends once they are whole")

    def results_written(self) -> None:
        """The results (or error) are whole: a SIGTERM that came meanwhile ends the job now."""
        if threading.current_thread() is not threading.main_thread():
            return
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if self.term_waiting:
            sys.stdout.flush()
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGTERM)

    def _on_term(self, signum: int, frame: types.FrameType | None) -> None:
        """SIGTERM (cancel, the limit itself, preemption): save, and let Slurm end us."""
        if self.cell_running:
            self.save_checkpoint()
            self.note_requeue()  # a preemption may requeue us

    def note_requeue(self) -> None:
        """Rank 0 writes when the job is (or may be) requeued: the watcher then takes the
        requeued job's new submit time for this job, not another that reused its id."""
        if not self.lead:
            return
        try:
            self._note_segment(**{REQUEUED_AT: time.time()})
        except OSError as error:
            _say(f"could not note the requeue in {SEGMENT_FILE}: {error}")

    def _note_segment(self, **values: Any) -> None:
        """``segment.json`` with ``values`` changed (the latest requeue's time kept)."""
        old = read_segment(self.folder)
        write_atomically(self.folder / SEGMENT_FILE, json.dumps(
            {**old, REQUEUED_AT: old.get(REQUEUED_AT), **values}).encode())

    def write_gathered(self, namespace: Mapping[str, Any]) -> None:
        if not self.options.gather:
            return
        folder = self.folder / GATHER_DIR
        folder.mkdir(mode=0o700, exist_ok=True)
        values = {name: namespace[name] for name in self.options.gather if name in namespace}
        write_atomically(folder / f"rank-{self.rank:05d}.pkl", _dumps(
            {"rank": self.rank, "world_size": self.world_size, "values": values}))


_CURRENT: NodeTask | None = None


def _say(message: str) -> None:
    """A line in the job's log; a log already closed by Slurm's kill is no error."""
    with contextlib.suppress(OSError):
        print(f"[hpc_magics] {message}", file=sys.stderr, flush=True)


# ``hpc_magics.resumed`` (the package reads it here: the node imports nothing above it)
resumed = False


def checkpoint() -> Path | None:
    """Save the ``--checkpoint`` variables now (rank 0; other ranks: no-op)."""
    if _CURRENT is None or not _CURRENT.options.checkpoint:
        raise RuntimeError("hpc_magics.checkpoint() works inside a %%sbatch --checkpoint "
                           "NAMES job")
    return _CURRENT.save_checkpoint()
