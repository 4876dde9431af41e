"""chaos's version, recorded in every verdict and mined fixture."""

__version__ = "0.2.0"
