"""The ops, one module per family; importing this package registers them all
(see :mod:`mli.ir.registry`)."""

from . import elementwise, movement, nn, recurrent, reduction, state, subgraph  # noqa: F401
