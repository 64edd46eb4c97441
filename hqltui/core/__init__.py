"""The core of hql-tui: retrieval, the index reader, sessions and jobs. Never imports Textual."""
