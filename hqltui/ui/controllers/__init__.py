"""Controllers: the app's workers (session, query, engine, jobs), apart from its widgets."""
