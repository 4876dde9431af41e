"""One case: its verdict, and the results folder that records it."""
