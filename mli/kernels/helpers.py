"""The ``mli_hlp_*`` helpers (csrc/src/helpers/mli_helpers.c)."""
from .. import _core
from .._status import Status, error, raise_for_status
from ..enums import ElementType
from ..tensor import Tensor, element_type
from ._base import count, tensor_arg

__all__ = ["count_elem_num", "tensor_element_size", "point_to_subtensor", "convert_tensor"]


def count_elem_num(t, start_dim=0):
    """``mli_hlp_count_elem_num``: product of shape[start_dim:rank] (0 when start_dim >= rank)."""
    if isinstance(start_dim, bool) or not 0 <= int(start_dim) < 2 ** 32:
        raise ValueError(f"count_elem_num: start_dim must be in 0..2**32-1, got {start_dim!r}")
    return _core.count_elem_num(tensor_arg("in", t, "count_elem_num"), int(start_dim))


def tensor_element_size(t):
    """``mli_hlp_tensor_element_size``: bytes per element of the el_type."""
    return _core.tensor_element_size(tensor_arg("in", t, "tensor_element_size"))


def point_to_subtensor(t, start_coord, first_out_dim_size=1):
    """``mli_hlp_point_to_subtensor``: a view of `t` starting at ``start_coord``
    (one coordinate per leading dimension) with ``first_out_dim_size`` entries
    on the first kept dimension.  The view shares `t`'s memory."""
    tensor_arg("in", t, "point_to_subtensor")
    coords = [int(c) for c in start_coord]
    if not 1 <= len(coords) <= 4 or not all(0 <= c < 2 ** 32 for c in coords):
        raise error(Status.BAD_FUNC_CFG, "mli_hlp_point_to_subtensor", "cfg", "start_coord",
                    f"needs 1 to 4 coordinates in 0..2**32-1, got {list(start_coord)}")
    if not 0 <= int(first_out_dim_size) <= 255:
        raise error(Status.BAD_FUNC_CFG, "mli_hlp_point_to_subtensor", "cfg", "first_out_dim_size",
                    f"must be in 0..255 (a uint8_t), got {first_out_dim_size}")
    out = Tensor()
    raise_for_status(_core.point_to_subtensor(t, coords, len(coords), int(first_out_dim_size), out),
                     "mli_hlp_point_to_subtensor")
    return out


def convert_tensor(t, el_type, frac_bits):
    """``mli_hlp_convert_tensor``: a new tensor of `el_type` ("fx8"/"fx16")
    and `frac_bits`, values shifted with rounding and saturated."""
    fname = "mli_hlp_convert_tensor"
    tensor_arg("in", t, "convert_tensor")
    et = element_type(el_type)
    es = 1 if et == ElementType.FX_8 else 2
    need = count(t) * es      # the bytes MLI's out capacity check asks for
    fx_in = t.el_type in (ElementType.FX_8, ElementType.FX_16)
    data = not t.data_null and t.scalar_value is None
    # an fx input passes CHK_TENSOR(in) only when its capacity (never more than
    # its buffer) holds its shape, so that out costs at most twice the input
    backed = fx_in and data and count(t) * (1 if t.el_type == ElementType.FX_8 else 2) <= t.capacity
    if need <= _SMALL_OUT or (backed and need <= 0xFFFFFFFF):
        return _convert_into(t, need, es, et, frac_bits)
    # a shape that no data vouches for: MLI's checks before out's capacity
    # first, with an out of capacity 0 (nothing is written when it fails)
    probe = Tensor.empty(1, et, frac_bits)
    probe.capacity = 0
    st = _core.convert_tensor(t, probe)
    failed = _core.last_error()
    if st != Status.NOT_ENGH_MEM or failed[0] != st or failed[2] != "out":
        raise_for_status(st, fname)
    if need > 0xFFFFFFFF:
        raise error(Status.NOT_ENGH_MEM, fname, "out", "capacity",
                    f"is too small for the result: {need} bytes exceed the largest capacity", expected=need,
                    actual=0xFFFFFFFF)
    if fx_in:   # what C answers once out is large enough: MLI would read through NULL
        raise error(Status.BAD_TENSOR, fname, "in", "data", "is NULL", mlipy_safety=True)
    # MLI converts nothing for this el_type and answers OK with out's shape set (SPEC 12.3)
    from ..io.limits import max_array_bytes
    if need > max_array_bytes():
        raise error(Status.NOT_ENGH_MEM, fname, "in", "shape",
                    f"asks for a {need}-byte out, above the {max_array_bytes()}-byte limit for data no buffer "
                    f"holds (in.el_type {t.el_type} is not an fx type, so MLI converts nothing)",
                    expected=max_array_bytes(), actual=need, mlipy_safety=True)
    return _convert_into(t, need, es, et, frac_bits)


_SMALL_OUT = 1 << 16   # bytes: an output this small is allocated before any check


def _convert_into(t, need, es, et, frac_bits):
    """convert_tensor's call into a new out of capacity `need` (its whole buffer)."""
    out = Tensor.empty(max(-(-need // es), 1), et, frac_bits)
    out.capacity = need
    raise_for_status(_core.convert_tensor(t, out), "mli_hlp_convert_tensor")
    return out
