"""Kept so that ``mli.export_c.make_tensor(...)``, ``render``, ``export_c`` and the other public names of
:mod:`mli.tools.export_c` stay where users found them; the command itself lives
in ``mli.tools`` with the other tools built on the API."""
import sys

from .tools.export_c import (  # noqa: F401
    ExportTensor, ExportCfg, quantize, make_tensor, make_buffer, make_rnn_cfg, render, export_c,
    main,
)

__all__ = ["ExportTensor", "ExportCfg", "quantize", "make_tensor", "make_buffer", "make_rnn_cfg", "render",
           "export_c", "main"]

if __name__ == "__main__":
    sys.exit(main())
