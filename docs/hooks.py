"""mkdocs hooks for the pages under docs/ (mkdocs.yml names this file; it is not a page)."""

import re

# A code span in a table row that holds an escaped pipe: `cycle\|random`.
_CODE_WITH_PIPE = re.compile(r"`[^`\n]*\\\|[^`\n]*`")


def on_page_markdown(markdown: str, **kwargs: object) -> str:
    """Unescape pipes inside code spans of table rows.

    GitHub's tables need a pipe escaped even inside a code span, and show it without the
    backslash; Python-Markdown keeps such a pipe in its cell unescaped, and would show the
    backslash."""
    lines = markdown.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("|") and "\\|" in line:
            lines[i] = _CODE_WITH_PIPE.sub(lambda m: m.group(0).replace("\\|", "|"), line)
    return "\n".join(lines)
