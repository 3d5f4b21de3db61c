"""Widgets, one per module: the bases (row lists, lines of text, fields) here, a run's panes in ``run/``."""
