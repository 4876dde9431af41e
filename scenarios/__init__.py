"""The bundled scenarios (package data of ``chaos.bundled.scenarios``; see ``README.md`` here)."""
