"""What is shown: one digest per thing, text and report rendering, exports, units, safe text, recipes as files."""
