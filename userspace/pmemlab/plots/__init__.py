"""Figures from sweep CSVs: a generic plot and one recipe per experiment of configs/."""
