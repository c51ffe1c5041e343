"""The converters, one per IR op type, grouped by family (see
:mod:`mli.fixed_point.registry`); importing this package registers them all."""

from . import recurrent  # noqa: F401  (registers the recurrent ops)
