"""What a cell needs from the notebook, how it travels to the job, and how it runs there."""
