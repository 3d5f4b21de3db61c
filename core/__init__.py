"""warmscope core: everything that is not drawing. Never imports Textual or torch at import time."""
