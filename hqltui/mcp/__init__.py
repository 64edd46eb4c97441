"""The agent interface: `hql-tui mcp VAULT` (``server``); the tools themselves are
``hqltui.core.agent``."""
