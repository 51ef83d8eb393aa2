"""Pure core: resource requests, cluster profiles, validation, job model.

Nothing in this package imports Jupyter, submitit or any other framework.
"""
