#!/bin/bash
#SBATCH --job-name=rec-probe
#SBATCH --time=1
#SBATCH --deadline=now+62
#SBATCH --hold
#SBATCH --output=/dev/null
sleep 100
