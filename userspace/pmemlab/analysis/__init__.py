"""Analysis: inference from measured curves (knees, granularity, interleave, tails); pure
numerics, importing nothing from plots/, cli/ or report.py."""
