"""gpuready: which AI work can this machine do locally, and how well."""

__version__ = "0.2.0"
