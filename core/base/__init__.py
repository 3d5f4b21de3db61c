"""The foundation: what every layer above it uses and nothing of theirs: strings made safe for a
terminal, units as people read them, sizes. (The vocabulary shared with the child, statuses,
exit codes and the error root, is ``core/child/outcome.py``: the child loads it by path.)"""
