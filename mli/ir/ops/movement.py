"""Shape and data-movement ops."""

from __future__ import annotations

import math

import numpy as np

from ...io.limits import check_size
from ..errors import ELEMENT_TYPES, IRError, IRUnsupportedError
from ..registry import (BROADCAST, REQUIRED, arr, choice, element_type, ints, parse_bool,
                        parse_floats, parse_ints, parse_strlist, ports, register)
from ..registry import axis as norm_axis


@register("Reshape", {"opset1"}, special_zero=(parse_bool, REQUIRED))
@ports(2)
def _reshape(layer, a, graph):
    special_zero = a["special_zero"]

    def fn(x, shape):
        dims = ints(shape, "Reshape target shape")
        out = []
        for i, d in enumerate(dims):
            if d == 0 and special_zero:
                if i >= x.ndim:
                    raise IRError(f"special_zero dim {i} beyond input rank {x.ndim}")
                d = x.shape[i]
            elif d < -1:
                raise IRError(f"invalid target dim {d}")
            out.append(d)
        if out.count(-1) > 1:
            raise IRError(f"more than one -1 in target shape {dims}")
        known = math.prod(d for d in out if d != -1)
        if -1 in out:
            if known == 0 or x.size % known:
                raise IRError(f"cannot reshape {list(x.shape)} to {dims}")
            out[out.index(-1)] = x.size // known
        if math.prod(out) != x.size:
            raise IRError(f"cannot reshape {list(x.shape)} ({x.size} elements) to {out}")
        return x.reshape(out)
    return fn


@register("Squeeze", {"opset1", "opset15"},
     _spec=lambda l: {"allow_axis_skip": (parse_bool, False)} if l.version == "opset15" else {})
@ports((1, 2))
def _squeeze(layer, a, graph):
    skip = layer.version == "opset15"    # Squeeze-15 keeps axes whose dim is not 1

    def fn(x, axes=None):
        vals = [] if axes is None else ints(axes, "Squeeze axes")
        if not vals:
            return x.reshape([d for d in x.shape if d != 1])
        ax = sorted({norm_axis(v, x.ndim) for v in vals})
        bad = [i for i in ax if x.shape[i] != 1]
        if bad and not skip:
            raise IRError(f"cannot squeeze axis {bad[0]} of shape {list(x.shape)}")
        return x.reshape([d for i, d in enumerate(x.shape) if i not in ax or i in bad])
    return fn


@register("Unsqueeze", {"opset1"})
@ports(2)
def _unsqueeze(layer, a, graph):
    def fn(x, axes):
        vals = ints(axes, "Unsqueeze axes")
        rank = x.ndim + len(vals)
        ax = [norm_axis(v, rank) for v in vals]
        if len(set(ax)) != len(ax):
            raise IRError(f"repeated Unsqueeze axes {vals}")
        dims = iter(x.shape)
        return x.reshape([1 if i in ax else next(dims) for i in range(rank)])
    return fn


@register("Concat", {"opset1"}, axis=(int, REQUIRED))
@ports(None)
def _concat(layer, a, graph):
    if not layer.inputs:
        raise IRError("Concat needs at least one input")

    def fn(*xs):
        if len({x.dtype for x in xs}) > 1:
            raise IRError(f"Concat inputs differ in type: {[str(x.dtype) for x in xs]}")
        return np.concatenate(xs, axis=norm_axis(a["axis"], xs[0].ndim))
    return fn


@register("ShapeOf", {"opset1", "opset3"},
     _spec=lambda l: {"output_type": (choice("i32", "i64"), "i64")} if l.version == "opset3"
     else {})
@ports(1)
def _shape_of(layer, a, graph):
    dt = ELEMENT_TYPES[a.get("output_type", "i64")]
    return lambda x: np.array(x.shape, dt)


@register("Range", {"opset1", "opset4"},
     _spec=lambda l: {"output_type": (element_type, REQUIRED)}
     if l.version == "opset4" else {})
@ports(3)
def _range(layer, a, graph):
    out_t = ELEMENT_TYPES[a["output_type"]] if "output_type" in a else None

    def fn(start, stop, step):
        vals = []
        for name, v in (("start", start), ("stop", stop), ("step", step)):
            if v.size != 1 or v.ndim > 1:
                raise IRError(f"Range {name} must be a scalar, got shape {list(v.shape)}")
            vals.append(v.reshape(()))
        dt = out_t if out_t is not None else vals[0].dtype
        if out_t is None and len({v.dtype for v in vals}) > 1:
            raise IRError("Range-1 inputs must share one type")
        if vals[2] == 0:
            raise IRError("Range step is 0")
        if dt.kind in "iu" and all(v.dtype.kind in "iu" for v in vals):
            return np.arange(int(vals[0]), int(vals[1]), int(vals[2]), dtype=dt)
        if dt.kind in "iu":
            raise IRUnsupportedError("Range with floating-point inputs and an integer output")
        return np.arange(*(v.astype(dt) for v in vals), dtype=dt)
    return fn


@register("Gather", {"opset1", "opset7", "opset8"},
     _spec=lambda l: {} if l.version == "opset1" else {"batch_dims": (int, 0)})
@ports(3)
def _gather(layer, a, graph):
    bd0, negative_ok = a.get("batch_dims", 0), layer.version == "opset8"

    def fn(data, indices, axis):
        ax = ints(axis, "Gather axis")
        if len(ax) != 1:
            raise IRError("Gather axis must have one element")
        if indices.dtype.kind not in "iu":
            raise IRError(f"Gather indices must be integers, got {indices.dtype}")
        ax = norm_axis(ax[0], data.ndim, "Gather axis")
        bd = bd0 + indices.ndim if bd0 < 0 else bd0
        if not 0 <= bd <= min(ax, indices.ndim) or data.shape[:bd] != indices.shape[:bd]:
            raise IRError(f"invalid batch_dims {bd0} for data {list(data.shape)}, indices "
                          f"{list(indices.shape)}, axis {ax}")
        dim = data.shape[ax]
        lo = -dim if negative_ok else 0
        if indices.ndim == 0:        # one index (so bd == 0): checked as a Python int
            i = int(indices)
            if i < lo or i >= dim:
                raise IRError(f"Gather index out of range [{lo}, {dim})")
            return np.take(data, i + dim if i < 0 else i, axis=ax)
        low = indices.min() if indices.size else 0
        if indices.size and (low < lo or indices.max() >= dim):
            raise IRError(f"Gather index out of range [{lo}, {dim})")
        idx = np.where(indices < 0, indices + dim, indices) if negative_ok and low < 0 \
            else indices
        if bd == 0:
            return np.take(data, idx, axis=ax)
        nb = math.prod(data.shape[:bd])
        d = data.reshape((nb,) + data.shape[bd:])
        i = idx.reshape((nb,) + idx.shape[bd:])
        parts = [np.take(d[k], i[k], axis=ax - bd) for k in range(nb)]
        tail = data.shape[bd:ax] + idx.shape[bd:] + data.shape[ax + 1:]
        out = np.stack(parts) if parts else np.empty((0,) + tail, data.dtype)
        return out.reshape(data.shape[:bd] + tail)
    return fn




# --- broadcasting, transposition, splitting, slicing, scattering
def _target_shape(shape, what):
    dims = ints(shape, what)
    if any(d < 0 for d in dims):
        raise IRError(f"{what} {dims} has a negative dimension")
    return tuple(dims)


def _broadcast_numpy(x, target):
    if x.ndim > len(target):
        raise IRError(f"cannot broadcast {list(x.shape)} to the lower-rank {list(target)}")
    for d, t in zip(x.shape[::-1], target[::-1]):
        if d != t and d != 1:
            raise IRError(f"cannot broadcast {list(x.shape)} to {list(target)} (numpy rules)")
    return np.broadcast_to(x, target)


@register("Broadcast", {"opset1", "opset3"},
          _spec=lambda l: {"mode": (choice("numpy", "explicit", "bidirectional", "pdpd")
                                    if l.version == "opset3" else choice("numpy", "explicit",
                                                                         "pdpd"), "numpy")})
@ports((2, 3))
def _broadcast(layer, a, graph):
    """Broadcast-1/3: numpy (data right-aligned to target_shape), bidirectional (-3 only:
    the numpy broadcast of both shapes), explicit (axes_mapping gives the output axis of
    each data axis)."""
    mode = a["mode"]
    if mode == "pdpd":
        raise IRUnsupportedError("Broadcast mode 'pdpd' is not supported")

    def fn(x, shape, axes_mapping=None):
        target = _target_shape(shape, "Broadcast target_shape")
        if mode == "numpy":
            out = _broadcast_numpy(x, target)
        elif mode == "bidirectional":
            try:
                out = np.broadcast_to(x, np.broadcast_shapes(x.shape, target))
            except ValueError:
                raise IRError(f"cannot broadcast {list(x.shape)} and {list(target)} "
                              f"bidirectionally") from None
        else:
            if axes_mapping is None:
                raise IRError("Broadcast mode 'explicit' needs the axes_mapping input")
            axes = ints(axes_mapping, "Broadcast axes_mapping")
            if len(axes) != x.ndim or axes != sorted(axes) or len(set(axes)) != len(axes) \
                    or any(not 0 <= v < len(target) for v in axes):
                raise IRError(f"axes_mapping {axes} does not map data {list(x.shape)} into "
                              f"{list(target)}")
            shape = [1] * len(target)
            for d, v in zip(x.shape, axes):
                if d != target[v] and d != 1:
                    raise IRError(f"data dim {d} does not fit target dim {target[v]}")
                shape[v] = d
            out = np.broadcast_to(x.reshape(shape), target)
        return np.array(out)
    return fn


_PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


@register("Pad", {"opset1", "opset12"}, pad_mode=(choice(*_PAD_MODES), REQUIRED))
@ports((3, 4))
def _pad(layer, a, graph):
    """Pad-1/12: pads_begin[i] / pads_end[i] elements before / after axis i,
    filled with pad_value (constant, default 0), the nearest element (edge),
    the mirror without the edge (reflect) or with it (symmetric); Pad-12
    also takes negative pads, which remove elements."""
    mode, negative_ok = a["pad_mode"], layer.version == "opset12"

    def fn(x, pads_begin, pads_end, pad_value=None):
        pb, pe = ints(pads_begin, "Pad pads_begin"), ints(pads_end, "Pad pads_end")
        if len(pb) != x.ndim or len(pe) != x.ndim:
            raise IRError(f"Pad: pads_begin {pb} / pads_end {pe} for an input of rank {x.ndim}")
        if not negative_ok and min(pb + pe, default=0) < 0:
            raise IRError(f"Pad-1: negative pads {pb} / {pe} (Pad-12 takes them)")
        out_shape = [d + b + e for d, b, e in zip(x.shape, pb, pe)]
        if any(d < 0 for d in out_shape):
            raise IRError(f"Pad: pads {pb} / {pe} remove more than {list(x.shape)} holds")
        check_size(math.prod(out_shape) * x.dtype.itemsize, f"Pad output {out_shape}")
        # negative pads first crop, the positive ones then pad
        crop = tuple(slice(max(-b, 0), d - max(-e, 0)) for d, b, e in zip(x.shape, pb, pe))
        y = x[crop]
        widths = [(max(b, 0), max(e, 0)) for b, e in zip(pb, pe)]
        if mode == "constant":
            v = 0 if pad_value is None else np.asarray(pad_value).reshape(-1)
            if pad_value is not None and np.asarray(pad_value).size != 1:
                raise IRError("Pad: pad_value must be a scalar")
            return np.pad(y, widths, mode="constant", constant_values=np.asarray(v, x.dtype).item())
        if mode in ("reflect", "symmetric"):
            edge = 1 if mode == "reflect" else 0
            for d, (b, e) in zip(y.shape, widths):
                if max(b, e) > d - edge:
                    raise IRError(f"Pad: {mode} pads {pb} / {pe} reach beyond the input {list(x.shape)}")
        elif y.size == 0 and any(b or e for b, e in widths):
            raise IRError("Pad: edge padding of an empty tensor")
        return np.pad(y, widths, mode=_PAD_MODES[mode])
    return fn


@register("Transpose", {"opset1"})
@ports(2)
def _transpose(layer, a, graph):
    """Transpose-1: output axis i is input axis order[i]; an empty order reverses the axes."""
    def fn(x, order):
        perm = ints(order, "Transpose order")
        if not perm:
            return np.ascontiguousarray(np.transpose(x))
        perm = [norm_axis(v, x.ndim, "Transpose order value") for v in perm]
        if sorted(perm) != list(range(x.ndim)):
            raise IRError(f"Transpose order {ints(order, '')} is not a permutation of "
                          f"{x.ndim} axes")
        return np.ascontiguousarray(np.transpose(x, perm))
    return fn


def _scalar_axis(axis_in, x, op):
    v = ints(axis_in, f"{op} axis")
    if len(v) != 1:
        raise IRError(f"{op} axis must be a scalar")
    return norm_axis(v[0], x.ndim, f"{op} axis")


@register("Split", {"opset1"}, num_splits=(int, REQUIRED))
@ports(2, n_outputs=None)
def _split(layer, a, graph):
    """Split-1: ``num_splits`` equal parts along ``axis``."""
    n = a["num_splits"]
    if n <= 0 or n != len(layer.outputs):
        raise IRError(f"num_splits={n} but the layer has {len(layer.outputs)} outputs")

    def fn(x, axis):
        ax = _scalar_axis(axis, x, "Split")
        if x.shape[ax] % n:
            raise IRError(f"axis {ax} of length {x.shape[ax]} does not split into {n} parts")
        size, pre = x.shape[ax] // n, (slice(None),) * ax     # the views np.split gives
        return tuple(x[pre + (slice(k * size, (k + 1) * size),)] for k in range(n))
    return fn


@register("VariadicSplit", {"opset1"})
@ports(3, n_outputs=None)
def _variadic_split(layer, a, graph):
    """VariadicSplit-1: parts of the given lengths along ``axis``; one length may be -1
    (the rest)."""
    def fn(x, axis, lengths):
        ax = _scalar_axis(axis, x, "VariadicSplit")
        ls = ints(lengths, "VariadicSplit split_lengths")
        if len(ls) != len(layer.outputs):
            raise IRError(f"{len(ls)} split_lengths for {len(layer.outputs)} outputs")
        if ls.count(-1) > 1 or any(v < -1 for v in ls):
            raise IRError(f"invalid split_lengths {ls}")
        dim = x.shape[ax]
        if -1 in ls:
            rest = dim - sum(v for v in ls if v != -1)
            if rest < 0:
                raise IRError(f"split_lengths {ls} exceed the axis length {dim}")
            ls[ls.index(-1)] = rest
        if sum(ls) != dim:
            raise IRError(f"split_lengths {ls} do not sum to the axis length {dim}")
        return tuple(np.split(x, np.cumsum(ls)[:-1], axis=ax))
    return fn


@register("Slice", {"opset8"})
@ports((4, 5))
def _slice(layer, a, graph):
    """Slice-8: ``data[start:stop:step]`` on the given axes (default 0, 1, ...), with
    Python's clamping of out-of-range bounds; step must not be 0."""
    def fn(x, start, stop, step, axes=None):
        st, sp, se = (ints(v, f"Slice {n}") for v, n in ((start, "start"), (stop, "stop"),
                                                         (step, "step")))
        if not len(st) == len(sp) == len(se):
            raise IRError(f"Slice start/stop/step lengths differ: {len(st)}, {len(sp)}, "
                          f"{len(se)}")
        ax = list(range(len(st))) if axes is None else ints(axes, "Slice axes")
        if len(ax) != len(st):
            raise IRError(f"{len(ax)} Slice axes for {len(st)} starts")
        ax = [norm_axis(v, x.ndim, "Slice axis") for v in ax]
        if len(set(ax)) != len(ax):
            raise IRError(f"repeated Slice axes {ax}")
        if 0 in se:
            raise IRError("Slice step is 0")
        index = [slice(None)] * x.ndim
        for i, b, e, s in zip(ax, st, sp, se):
            index[i] = slice(b, e, s)
        return np.ascontiguousarray(x[tuple(index)])
    return fn


_MASK: tuple = (parse_ints, [])


@register("StridedSlice", {"opset1"}, begin_mask=(parse_ints, REQUIRED),
          end_mask=(parse_ints, REQUIRED), new_axis_mask=_MASK, shrink_axis_mask=_MASK,
          ellipsis_mask=_MASK)
@ports((3, 4))
def _strided_slice(layer, a, graph):
    """StridedSlice-1: begin_mask/end_mask[i] = 1 ignore begin/end[i] (whole range);
    new_axis_mask inserts a 1-dim, shrink_axis_mask takes the single element begin[i],
    ellipsis_mask stands for the axes not named."""
    if sum(a["ellipsis_mask"]) > 1:
        raise IRError("more than one bit set in ellipsis_mask")

    def bit(mask, i):
        return i < len(mask) and mask[i] != 0

    def fn(x, begin, end, stride=None):
        b, e = ints(begin, "StridedSlice begin"), ints(end, "StridedSlice end")
        s = [1] * len(b) if stride is None else ints(stride, "StridedSlice stride")
        if not len(b) == len(e) == len(s):
            raise IRError(f"begin/end/stride lengths differ: {len(b)}, {len(e)}, {len(s)}")
        if 0 in s:
            raise IRError("StridedSlice stride is 0")
        index = []
        for i in range(len(b)):
            if bit(a["ellipsis_mask"], i):
                index.append(Ellipsis)
            elif bit(a["new_axis_mask"], i):
                index.append(np.newaxis)
            elif bit(a["shrink_axis_mask"], i):
                index.append(b[i])
            else:
                index.append(slice(None if bit(a["begin_mask"], i) else b[i],
                                   None if bit(a["end_mask"], i) else e[i], s[i]))
        try:
            return np.ascontiguousarray(x[tuple(index)])
        except IndexError as err:
            raise IRError(f"StridedSlice of {list(x.shape)}: {err}") from None
    return fn


@register("ScatterUpdate", {"opset3"})
@ports(4)
def _scatter_update(layer, a, graph):
    """ScatterUpdate-3: a copy of data whose slices ``indices`` along ``axis`` are replaced
    by updates (shape data[:axis] + indices + data[axis+1:]); negative indices count from
    the end; with repeated indices the last update wins."""
    def fn(data, indices, updates, axis):
        ax = _scalar_axis(axis, data, "ScatterUpdate")
        if indices.dtype.kind not in "iu":
            raise IRError(f"ScatterUpdate indices must be integers, got {indices.dtype}")
        want = data.shape[:ax] + indices.shape + data.shape[ax + 1:]
        if updates.shape != want or updates.dtype != data.dtype:
            raise IRError(f"updates {updates.dtype}{list(updates.shape)} must be "
                          f"{data.dtype}{list(want)}")
        dim = data.shape[ax]
        idx = indices.astype(np.int64).reshape(-1)
        if idx.size and (idx.min() < -dim or idx.max() >= dim):
            raise IRError(f"ScatterUpdate index out of range [{-dim}, {dim})")
        idx = np.where(idx < 0, idx + dim, idx)
        out = data.copy()
        upd = updates.reshape(data.shape[:ax] + (idx.size,) + data.shape[ax + 1:])
        pre = (slice(None),) * ax
        for k, i in enumerate(idx):            # in order: the last update of an index wins
            out[pre + (i,)] = upd[pre + (k,)]
        return out
    return fn


@register("ReverseSequence", {"opset1"}, batch_axis=(int, 0), seq_axis=(int, 1))
@ports(2)
def _reverse_sequence(layer, a, graph):
    """ReverseSequence-1: for each batch row b, reverse the first seq_lengths[b] elements
    along seq_axis."""
    def fn(x, lengths):
        ba = norm_axis(a["batch_axis"], x.ndim, "batch_axis")
        sa = norm_axis(a["seq_axis"], x.ndim, "seq_axis")
        if ba == sa:
            raise IRError("batch_axis and seq_axis are the same axis")
        if lengths.dtype.kind not in "iuf" or lengths.shape != (x.shape[ba],):
            raise IRError(f"seq_lengths must be [{x.shape[ba]}], got "
                          f"{lengths.dtype}{list(lengths.shape)}")
        lens = lengths.astype(np.int64)
        if lens.size and (lens.min() < 0 or lens.max() > x.shape[sa]):
            raise IRError(f"seq_lengths {lens.tolist()} outside [0, {x.shape[sa]}]")
        out = x.copy()
        xv, ov = np.moveaxis(x, (ba, sa), (0, 1)), np.moveaxis(out, (ba, sa), (0, 1))
        for b, n in enumerate(lens):
            if n > 1:
                ov[b, :n] = xv[b, n - 1::-1]
        return out
    return fn


@register("Tile", {"opset1"})
@ports(2)
def _tile(layer, a, graph):
    def fn(x, repeats):
        r = ints(repeats, "Tile repeats")
        if any(v < 0 for v in r):
            raise IRError(f"negative Tile repeats {r}")
        return np.tile(x, r)
    return fn
