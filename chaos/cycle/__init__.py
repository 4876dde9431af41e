"""One crash cycle, run: evidence in memory, handed on to checks, mining and reports."""
