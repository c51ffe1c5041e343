"""The error of a model (or one of its layers) that cannot be converted to fixed point."""

from __future__ import annotations

from ..ir.errors import IRUnsupportedError

__all__ = ["FixedPointError"]


class FixedPointError(IRUnsupportedError):
    """A model (or one of its cells) that cannot be converted to fixed point."""
