"""Framework agents chaos ships: thin drivers that load a LangGraph graph or an OpenAI Agents SDK agent
by ``module:attr`` (the bundled one-tool apps by default, a user's own with ``--app``), run it against
the scripted model on its framework's own SQLite store, and resume it from that store."""
