#!/bin/bash -l
#SBATCH --job-name=train
#SBATCH --account=a-infra01-1
#SBATCH --partition=debug
#SBATCH --time=01:30:00
#SBATCH --no-requeue
#SBATCH --output=/scratch/ada/hpc_jobs/train-20250101-120000-abcd/%j_0_log.out
#SBATCH --error=/scratch/ada/hpc_jobs/train-20250101-120000-abcd/%j_0_log.err
#SBATCH --signal=USR2@0
#SBATCH --open-mode=append

# hpc_magics: runs the %%sbatch cell (job.py) through submitit's engine;
# results.pkl and output.txt come back to the notebook.

umask 077

# GPU use for %hpc_efficiency: sampled every 5 s when the job has GPUs and the node has nvidia-smi
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used,memory.total --format=csv,noheader,nounits -l 5 -i "$CUDA_VISIBLE_DEVICES" > /scratch/ada/hpc_jobs/train-20250101-120000-abcd"/gpu-${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}${SLURM_ARRAY_TASK_ID:+_$SLURM_ARRAY_TASK_ID}.csv" 2>/dev/null &
    hpc_gpu_sampler=$!
    trap 'kill "$hpc_gpu_sampler" 2>/dev/null' EXIT
fi
export SUBMITIT_EXECUTOR=slurm
srun --unbuffered --output /scratch/ada/hpc_jobs/train-20250101-120000-abcd/%j_%t_log.out --error /scratch/ada/hpc_jobs/train-20250101-120000-abcd/%j_%t_log.err /opt/venv/bin/python -u -m hpc_magics.node.engine /scratch/ada/hpc_jobs/train-20250101-120000-abcd
