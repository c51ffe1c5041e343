"""LUT objects and their tables (SPEC_MLI2 section 4), and the lookup of section 5.1."""

import functools
import math
import zlib
from dataclasses import dataclass

import numpy as np

from .codes import FX_16, NOT_ENGH_MEM, OK
from .fxmath import _arr, asr, rshr, sat, shl, wrap


# Section 4: LUT objects and their tables.

#: length, input_offset, in_frac_bits, function of the two tables (4.2).
_TABLES = {
    "tanh": (344, 172, 5, math.tanh),
    "sigm": (320, 160, 4, lambda t: 1.0 / (1.0 + math.exp(-t))),
}
#: CRC-32 of the little-endian int16 table and sum of its entries (4.2).
LUT_CHECKS = {"tanh": (0x4CBBF8B6, -32767), "sigm": (0x589D26EB, 5226497)}


@functools.cache
def _table(name):
    length, offset, q, func = _TABLES[name]
    values = []
    for i in range(length):
        y = func((i - offset) / 2.0 ** q) * 32768.0
        y = math.trunc(y + 0.5) if y > 0 else math.trunc(y - 0.5)   # half away from zero
        values.append(min(max(y, -32768), 32767))
    table = np.array(values, dtype="<i2")
    crc, total = LUT_CHECKS[name]
    # every fraction is far from one half, so any correct libm gives these bytes
    if zlib.crc32(table.tobytes()) != crc or int(table.astype(np.int64).sum()) != total:
        raise RuntimeError(f"the {name} table does not match SPEC_MLI2 4.2's checksum")
    table.setflags(write=False)
    return table


def lut_table(name):
    """The Q15 table of "tanh" or "sigm" as an int16 array (a copy)."""
    return _table(name).astype(np.int16)


def get_lut_size(name):
    """``mli_krn_{tanh,sigm}_get_lut_size()``: bytes of the table (688 / 640)."""
    return 2 * _TABLES[name][0]


@dataclass
class Lut:
    """``mli_lut``: the caller's storage capacity plus what create_lut writes.

    ``table`` is None until a successful create (the C object then holds only
    its ``type``)."""
    capacity: int
    table: object = None
    type: int = 0
    length: int = 0
    in_frac_bits: int = 0
    out_frac_bits: int = 0
    input_offset: int = 0
    output_offset: int = 0


def create_lut(name, lut):
    """``mli_krn_{name}_create_lut(lut)``: fill `lut`, return the status (4.1)."""
    lut.type = FX_16                                       # written before the capacity check
    if lut.capacity < get_lut_size(name):
        return NOT_ENGH_MEM
    length, offset, q, _ = _TABLES[name]
    lut.table = _table(name).astype(np.int64)
    lut.length, lut.input_offset, lut.in_frac_bits = length, offset, q
    lut.output_offset, lut.out_frac_bits = 0, 15
    return OK


def lut_lookup(x, f, lut, rounding):
    """LUT(x, f, T) of section 5.1: Q15 values of 32-bit inputs x with f frac bits."""
    if lut.table is None:
        raise ValueError("LUT object was never filled (its create_lut failed): MLI reads out of bounds")
    x = _arr(x)
    t, n, off, q = lut.table, lut.length, lut.input_offset, lut.in_frac_bits
    s = f - q
    if min(s, 15) > 0:                                    # input finer than the table: interpolate
        pre = min(max(s - 15, 0), 15)
        s = min(s, 15)
        xs = asr(x, pre, 32)
        k = np.clip(sat(asr(xs, s, 32) + off, 32), 0, n - 2)
        fr = xs & ((1 << s) - 1)                          # from the unclamped xs
        a = t[k]
        d = wrap(a - t[k + 1], 16)
        return wrap(a - sat(rshr(d * fr, s, 32, rounding), 16), 16)
    k = np.clip(sat(shl(x, -s, 32) + off, 32), 0, n - 1)
    return t[k].copy()
