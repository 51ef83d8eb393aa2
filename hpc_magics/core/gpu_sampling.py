"""GPU samples: ``nvidia-smi`` every few seconds into the job folder, one file per node.

The node side samples (``node/node_facts.py``, the first task on each node of the
job), only where the job was given GPUs (``CUDA_VISIBLE_DEVICES`` set) and the node has
``nvidia-smi``; nothing at all otherwise. One query every few seconds costs a few
milliseconds of one core. ``%hpc_efficiency`` and the job widget plot the files.
"""

from __future__ import annotations

SAMPLE_EVERY_S = 5
SAMPLES_GLOB = "gpu-*.csv"


def samples_file(job_id: str) -> str:
    """The sample file's name for ``job_id`` (``123`` or an array task ``123_4``), as
    job scripts before per-node sampling wrote it."""
    return f"gpu-{job_id}.csv"


def node_samples_file(job_id: str, host: str) -> str:
    """One node's samples of ``job_id``: every node of a multi-node job samples its own."""
    return f"gpu-{job_id}.{host}.csv"


def samples_files_glob(job_id: str) -> str:
    """Every node's sample files of ``job_id`` (and the older single file)."""
    return f"gpu-{job_id}.*csv"
