"""The explorer's screens: indexing progress, the main explorer, help and prompts."""
