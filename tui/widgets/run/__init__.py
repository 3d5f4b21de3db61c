"""The panes that draw one run: header, latency chart, summary, iterations, events, usage, stderr."""
