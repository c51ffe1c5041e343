"""Kept so that ``mli.crosscheck.crosscheck(...)``, ``crosscheck_har`` and the other public names of
:mod:`mli.tools.crosscheck` stay where users found them; the command itself lives
in ``mli.tools`` with the other tools built on the API."""
import sys

from .tools.crosscheck import (  # noqa: F401
    CaseError, LayerResult, CrosscheckResult, DatasetResult, load_case, run_case, crosscheck,
    crosscheck_har, plot_results, main, KERNELS, KINDS, ROUNDINGS,
)

__all__ = ["CaseError", "LayerResult", "CrosscheckResult", "DatasetResult", "load_case", "run_case",
           "crosscheck", "crosscheck_har", "plot_results", "main", "KERNELS", "KINDS", "ROUNDINGS"]

if __name__ == "__main__":
    sys.exit(main())
