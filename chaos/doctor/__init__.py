"""Is a target file usable by ``chaos sweep``, and if not, what to change (``chaos target check``)."""
