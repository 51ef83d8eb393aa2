"""The job script's GPU sampler: ``nvidia-smi`` every few seconds into the job folder.

Only where the job was given GPUs (``CUDA_VISIBLE_DEVICES`` set) and the node has
``nvidia-smi``; nothing at all otherwise. One query every few seconds costs a few
milliseconds of one core. ``%hpc_efficiency`` and the job widget plot the file.
"""

from __future__ import annotations

import shlex

SAMPLE_EVERY_S = 5
SAMPLES_GLOB = "gpu-*.csv"
# gpu-123.csv, or gpu-123_4.csv for an array's task 4
_SAMPLES_NAME = ('"/gpu-${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}'
                 '${SLURM_ARRAY_TASK_ID:+_$SLURM_ARRAY_TASK_ID}.csv"')


def samples_file(job_id: str) -> str:
    """The sample file's name for ``job_id`` (``123`` or an array task ``123_4``)."""
    return f"gpu-{job_id}.csv"


def sampler_lines(folder: str, every_s: int = SAMPLE_EVERY_S) -> tuple[str, ...]:
    """Shell lines that start the sampler in the background and stop it when the script ends."""
    from .efficiency import GPU_QUERY  # here: job scripts render at %load_ext's cost

    target = shlex.quote(folder) + _SAMPLES_NAME
    query = (f"nvidia-smi --query-gpu={GPU_QUERY} --format=csv,noheader,nounits "
             f'-l {every_s} -i "$CUDA_VISIBLE_DEVICES"')
    return (
        f"# GPU use for %hpc_efficiency: sampled every {every_s} s when the job has GPUs "
        "and the node has nvidia-smi",
        'if [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && command -v nvidia-smi >/dev/null 2>&1; then',
        f"    {query} > {target} 2>/dev/null &",
        "    hpc_gpu_sampler=$!",
        "    trap 'kill \"$hpc_gpu_sampler\" 2>/dev/null' EXIT",
        "fi",
    )
