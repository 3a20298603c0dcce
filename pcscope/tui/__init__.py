"""The Textual explorer (the only package that imports Textual)."""
