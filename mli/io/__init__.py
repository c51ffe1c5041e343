"""File formats used around MLI: IDX (MNIST / MLI example data), raw binary
dumps, .npy/.npz, and C array initialisers in .c/.h/.inc files."""

from .c_array import format_c_array, list_c_arrays, qmn, read_c_array, read_c_arrays
from .idx import encode_idx, read_idx, write_idx
from .limits import SizeLimitError, max_array_bytes
from .load import load_array, parse_spec
from .npz import read_npy, read_npz, write_npy, write_npz
from .raw import read_raw, write_raw

__all__ = ["read_idx", "write_idx", "encode_idx", "read_raw", "write_raw", "read_npy", "write_npy", "read_npz",
           "write_npz", "read_c_array", "read_c_arrays", "list_c_arrays", "format_c_array", "qmn", "load_array",
           "parse_spec", "SizeLimitError", "max_array_bytes"]
