"""The analysis core: models, readers, evidence, patterns, engine. Never imports Textual."""
