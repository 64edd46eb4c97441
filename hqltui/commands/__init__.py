"""One module per `hql-tui` command; each exposes a function returning an exit code."""
