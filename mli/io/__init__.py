"""File formats used around MLI: IDX (MNIST / MLI example data)."""

from .idx import encode_idx, read_idx, write_idx

__all__ = ["read_idx", "write_idx", "encode_idx"]
