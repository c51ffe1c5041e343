"""MLI 2.0.2's own x86 libraries (../shared/oracle_mli20/lib) called through
ctypes on mli.v2 objects: a test oracle, never part of the package.

``Oracle("conv" | "up")`` loads one library.  ``oracle.call(name, *args)``
takes the arguments of the mli.v2 function of that name (``"lstm_cell_fx16"``,
``"fully_connected_fx16_fx8_fx8"``, ``"tanh_fx16"``, ...: mli.v2.Tensor, Lut,
RnnCellCfg, FullyConnectedCfg, RnnDenseCfg or None for a NULL pointer), builds
MLI's C structs over the very same numpy buffers (so tensors that share memory
share it in MLI too), runs MLI's function and returns its status; MLI's LUT
objects are made by MLI's own ``*_create_lut`` (in storage of the oracle's,
unless a Lut given has its buffer: then in that buffer).  The output structs'
fields MLI changed are returned by ``call(..., meta=True)`` as a second value.

``oracle.call_forked(...)`` runs the call in a forked child and returns its
status, or -1000 - signal when MLI crashed (-1000 when the child died
without one; the child's buffers are its own).
"""
from __future__ import annotations

import ctypes
import faulthandler
import os
import struct

import numpy as np

from conftest import SHARED

import mli.v2 as v2

LIB_DIR = SHARED / "oracle_mli20" / "lib"
LIBS = {"conv": LIB_DIR / "libmli20_x86_round_convergent.so", "up": LIB_DIR / "libmli20_x86_round_up.so"}
AVAILABLE = all(p.is_file() for p in LIBS.values())
SKIP_REASON = f"MLI 2.0.2's x86 libraries not found at {LIB_DIR} (set MLI_SHARED; CI always has it)"


class _Mem(ctypes.Union):
    _fields_ = [("ptr", ctypes.c_void_p), ("i32", ctypes.c_int32), ("i16", ctypes.c_int16), ("i8", ctypes.c_int8)]


class _Container(ctypes.Structure):
    _fields_ = [("capacity", ctypes.c_uint32), ("mem", _Mem)]


class _Fx(ctypes.Structure):
    _fields_ = [("frac_bits", ctypes.c_int8)]


class _Sa(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("zero_point", _Container), ("scale", _Container), ("dim", ctypes.c_int32),
                ("scale_frac_bits", _Container)]


class _Params(ctypes.Union):
    _fields_ = [("fx", _Fx), ("sa", _Sa)]


class CTensor(ctypes.Structure):
    _fields_ = [("data", _Container), ("mem_stride", ctypes.c_int32 * 4), ("shape", ctypes.c_uint32 * 4),
                ("rank", ctypes.c_uint32), ("el_type", ctypes.c_int), ("el_params", _Params)]


class CLut(ctypes.Structure):
    _fields_ = [("data", _Container), ("type", ctypes.c_int), ("length", ctypes.c_int32),
                ("in_frac_bits", ctypes.c_int32), ("out_frac_bits", ctypes.c_int32),
                ("input_offset", ctypes.c_int32), ("output_offset", ctypes.c_int32)]


class CCellCfg(ctypes.Structure):
    _fields_ = [("direction", ctypes.c_int), ("results", ctypes.c_int), ("act", ctypes.c_int),
                ("scratch_data", _Container)]


class CFcCfg(ctypes.Structure):
    _fields_ = [("relu", ctypes.c_int)]


class CDenseCfg(ctypes.Structure):
    _fields_ = [("inputs_num", ctypes.c_uint8)]


def _addr(buf) -> int:
    if buf is None:
        return 0
    if isinstance(buf, np.ndarray):
        return buf.__array_interface__["data"][0] if buf.size else 0
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


def _tensor(t) -> CTensor:
    c = CTensor()
    c.data.capacity = int(t.capacity) & 0xFFFFFFFF
    c.data.mem.ptr = _addr(t.buffer) or None
    for i in range(4):
        c.mem_stride[i] = int(t.mem_stride[i])
        c.shape[i] = int(t.shape[i]) & 0xFFFFFFFF
    c.rank = int(t.rank)
    c.el_type = int(t.el_type)
    if t.el_type in (v2.SA_8, v2.SA_32):
        sa = c.el_params.sa
        sa.type, sa.dim = int(t.sa_type), int(t.sa_dim)
        if t.sa_dim < 0:
            sa.zero_point.mem.i16 = int(t.zero_point[0])
            sa.scale.mem.i16 = int(t.scale[0])
            sa.scale_frac_bits.mem.i8 = int(t.scale_frac_bits[0])
        else:
            sa.zero_point.mem.ptr = _addr(t.zero_point)
            sa.scale.mem.ptr = _addr(t.scale)
            sa.scale_frac_bits.mem.ptr = _addr(t.scale_frac_bits)
        sa.zero_point.capacity = int(t.zero_point_capacity)
        sa.scale.capacity = int(t.scale_capacity)
        sa.scale_frac_bits.capacity = int(t.scale_frac_bits_capacity)
    else:
        c.el_params.fx.frac_bits = int(t.frac_bits)
    return c


def _meta(c: CTensor) -> dict:
    d = {"rank": c.rank, "shape": list(c.shape), "mem_stride": list(c.mem_stride)}
    if c.el_type in (v2.SA_8, v2.SA_32):
        sa = c.el_params.sa
        d.update(zero_point=sa.zero_point.mem.i16, scale=sa.scale.mem.i16, scale_frac_bits=sa.scale_frac_bits.mem.i8)
    else:
        d["frac_bits"] = c.el_params.fx.frac_bits
    return d


P = ctypes.POINTER


class Oracle:
    """One of MLI 2.0.2's libraries ("conv": ROUND_MODE=CONVERGENT, "up": UP)."""

    def __init__(self, mode: str = "conv") -> None:
        self.lib = ctypes.CDLL(str(LIBS[mode]))
        self.mode = mode
        self._luts = {}
        for fn in ("tanh", "sigm"):
            getattr(self.lib, f"mli_krn_{fn}_get_lut_size").restype = ctypes.c_int32

    def lut(self, fn: str, into=None) -> CLut:
        """MLI's LUT object for fn, made by MLI (in `into`'s buffer when given)."""
        if into is None and fn in self._luts:
            return self._luts[fn][0]
        size = getattr(self.lib, f"mli_krn_{fn}_get_lut_size")()
        store = np.zeros((size + 1) // 2, np.int16) if into is None else into.buffer
        lut = CLut()
        lut.data.capacity = size if into is None else int(into.capacity)
        lut.data.mem.ptr = _addr(store)
        st = getattr(self.lib, f"mli_krn_{fn}_create_lut")(ctypes.byref(lut))
        assert st == 0, f"MLI's {fn}_create_lut: status {st}"
        if into is None:
            self._luts[fn] = (lut, store)
        return lut

    def call(self, name: str, *args, meta: bool = False):
        fn = getattr(self.lib, "mli_krn_" + name)
        fn.restype = ctypes.c_int
        keep = []

        def t(x):
            if x is None:
                return None
            c = _tensor(x)
            keep.append(c)
            return ctypes.byref(c)

        def lut(x, which):
            if isinstance(x, CLut):
                return ctypes.byref(x)
            if x is None or x is getattr(v2, f"{which}_lut")():
                return ctypes.byref(self.lut(which))  # the oracle's own object
            return ctypes.byref(self.lut(which, x))

        outs = {}
        if name.startswith(("tanh_", "sigm_")):
            x, lut_, out = (list(args) + [None] * 3)[:3]
            c_out = _tensor(out) if out is not None else None
            outs["out"] = c_out
            cargs = [t(x), lut(lut_, name[:4]), ctypes.byref(c_out) if c_out is not None else None]
        elif name.startswith("fully_connected_"):
            x, w, b, cfg, out = args
            c_out = _tensor(out) if out is not None else None
            outs["out"] = c_out
            c_cfg = None if cfg is None else CFcCfg(int(cfg.relu))
            cargs = [t(x), t(w), t(b), ctypes.byref(c_cfg) if c_cfg is not None else None,
                     ctypes.byref(c_out) if c_out is not None else None]
        elif name.startswith("rnn_dense_"):
            ins, ws, b, cfg, out = args
            arr_in, arr_w = (P(CTensor) * 4)(), (P(CTensor) * 4)()

            def ptr(x):
                c = _tensor(x)
                keep.append(c)
                return ctypes.pointer(c)

            for i in range(4):
                if i < len(ins) and ins[i] is not None:
                    arr_in[i] = ptr(ins[i])
                if i < len(ws) and ws[i] is not None:
                    arr_w[i] = ptr(ws[i])
            c_out = _tensor(out) if out is not None else None
            outs["out"] = c_out
            c_cfg = None if cfg is None else CDenseCfg(int(cfg.inputs_num))
            cargs = [arr_in, arr_w, t(b), ctypes.byref(c_cfg) if c_cfg is not None else None,
                     ctypes.byref(c_out) if c_out is not None else None]
        else:
            lstm = name.startswith("lstm_")
            x, h, wi, wo, b, tl, sl, cfg = args[:8]
            cell, out = (args[8], args[9]) if lstm else (None, args[8])
            c_cfg = None
            if cfg is not None:
                c_cfg = CCellCfg(int(cfg.direction), int(cfg.results), int(cfg.act))
                c_cfg.scratch_data.capacity = int(cfg.scratch_capacity)
                c_cfg.scratch_data.mem.ptr = _addr(cfg.scratch_buffer) or None
            c_out = _tensor(out) if out is not None else None
            outs["out"] = c_out
            cargs = [t(x), t(h), t(wi), t(wo), t(b), lut(tl, "tanh"), lut(sl, "sigm"),
                     ctypes.byref(c_cfg) if c_cfg is not None else None]
            if lstm:
                cargs.append(t(cell))
            cargs.append(ctypes.byref(c_out) if c_out is not None else None)
        st = fn(*cargs)
        if not meta:
            return st
        return st, {k: _meta(c) for k, c in outs.items() if c is not None}

    def call_forked(self, name: str, *args) -> int:
        """call() in a forked child: its status, or -1000 - signal when MLI crashed."""
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                os.close(r)
                faulthandler.disable()
                os.write(w, struct.pack("<i", self.call(name, *args)))
            finally:
                os._exit(0)
        os.close(w)
        data = b""
        while True:
            chunk = os.read(r, 4)
            if not chunk:
                break
            data += chunk
        os.close(r)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            return -1000 - os.WTERMSIG(status)
        if len(data) != 4:      # the child died without a signal (e.g. a sanitizer's handler exited)
            return -1000
        return struct.unpack("<i", data)[0]
