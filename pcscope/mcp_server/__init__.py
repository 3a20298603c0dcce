"""`pcscope mcp` and `pcscope skill`: pcscope opened to any agent (Claude Code, Codex …)."""
