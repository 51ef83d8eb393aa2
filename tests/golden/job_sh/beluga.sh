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
# srun again only if the step never began and slurmctld is unreachable (a restart)
began=/scratch/ada/hpc_jobs/train-20250101-120000-abcd/.step-began-$SLURM_JOB_ID
rm -f "$began"
hpc_magics_step() {
  for pause in 10 20 30 60 120 180 180 last; do
    srun --unbuffered --output /scratch/ada/hpc_jobs/train-20250101-120000-abcd/%j_%t_log.out --error /scratch/ada/hpc_jobs/train-20250101-120000-abcd/%j_%t_log.err /opt/venv/bin/python -u -m hpc_magics.node.engine /scratch/ada/hpc_jobs/train-20250101-120000-abcd && return 0
    status=$?
    if [ "$pause" = last ] || [ -e "$began" ] ||
        timeout 30 scontrol ping 2>/dev/null | grep -q " is UP"; then
      return "$status"
    fi
    echo "hpc_magics: slurmctld unreachable, the step never began: srun again in ${pause} s" >&2
    sleep "$pause"
  done
}
hpc_magics_step
