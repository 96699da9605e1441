"""Analysis: what a family of measurements means (curves, inference, statistics), in pure Python.

Its modules import nothing from plots/, cli/ or report.py: the layers point down."""
