"""Query side: the Lance SQL filter dialect (more of the scanner arrives here)."""
