"""Notebook conversion: nbformat in, text out (the job script of a notebook or cell);
rules as data in ``display_rules.py`` and ``magic_rules.py``. Nothing here submits a job."""
