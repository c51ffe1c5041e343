"""Kept so that ``python -m mli.vectors DIR``, ``run_case``, ``run_dir`` and the other public names of
:mod:`mli.tools.vectors` stay where users found them; the command itself lives
in ``mli.tools`` with the other tools built on the API."""
import sys

from .tools.vectors import (  # noqa: F401
    CaseResult, load_case, build_tensor, run_case, run_dir, main,
)

__all__ = ["CaseResult", "load_case", "build_tensor", "run_case", "run_dir", "main"]

if __name__ == "__main__":
    sys.exit(main())
