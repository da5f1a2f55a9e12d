"""The validation suite: theory held against simulations.

Each entry is a module of this package with a function ``run(out, *, quick, rng) -> Section``;
the suite collects the sections into ``report.json`` and ``report.md`` (see :mod:`.report`).
The top-level ``validation/`` folder of the repository is a thin entry point to this package so
that ``python -m validation`` works from a checkout and ``replica-mlm validate`` after install.
"""

from replica_mlm.validation.report import Check, Section, write_report

__all__ = ["Check", "Section", "write_report"]
