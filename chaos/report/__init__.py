"""Reports for people and CI: terminal text, timelines, summaries, JUnit, HTML; all escaped."""
