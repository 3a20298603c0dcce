"""The persistent index store and the Tantivy text index. Never imports Textual."""
