"""Charts drawn as text: pure functions and the bounded series they draw; no widgets here."""
