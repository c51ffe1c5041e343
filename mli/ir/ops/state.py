"""ReadValue-6 / Assign-6: variables kept between calls of a model."""

from __future__ import annotations
