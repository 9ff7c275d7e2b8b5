"""Feeding other systems: node labels, metrics and scheduler resources from a report.

Every exporter here is a pure function over the documented JSON report (``gpuready
report --json``, see ``gpuready/schemas/report.schema.json``), never over internal
dataclasses, so a report collected on another machine exports the same way as a fresh
one. :mod:`capacity` derives the per-task capacities once; :mod:`nfd`, :mod:`prometheus`,
:mod:`ray` and :mod:`slurm` write them in each system's own format; :mod:`fleet` merges
many reports into one table.
"""
