"""The child side, loaded whole by path by the agent: standard library at import, torch passed in."""
