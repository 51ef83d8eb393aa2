#!/bin/bash
#SBATCH --job-name=train
#SBATCH --account=def-smith
#SBATCH --time=01:00:00
#SBATCH --no-requeue
#SBATCH --output=/scratch/ada/hpc_jobs/train-20250101-120000-abcd/%j_0_log.out
#SBATCH --error=/scratch/ada/hpc_jobs/train-20250101-120000-abcd/%j_0_log.err
#SBATCH --signal=USR2@0
#SBATCH --open-mode=append

# hpc_magics: runs the %%sbatch cell (job.py) through submitit's engine;
# results.pkl and output.txt come back to the notebook.

umask 077

export SUBMITIT_EXECUTOR=slurm
srun --unbuffered --output /scratch/ada/hpc_jobs/train-20250101-120000-abcd/%j_%t_log.out --error /scratch/ada/hpc_jobs/train-20250101-120000-abcd/%j_%t_log.err /opt/venv/bin/python -u -m hpc_magics.node.engine /scratch/ada/hpc_jobs/train-20250101-120000-abcd
