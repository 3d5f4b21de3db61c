"""warmscope TUI: the Textual app. Never imports torch."""
