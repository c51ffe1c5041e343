# mli_hlp_* (csrc/src/helpers/).
# (Included by mli/_core.pyx: one module, so it shares the module's names and cimports.)

# ----------------------------------------------------------------- helpers
def count_elem_num(CTensor inp, uint32_t start_dim):
    return mli_hlp_count_elem_num(tp(inp), start_dim)


def tensor_element_size(CTensor inp):
    return mli_hlp_tensor_element_size(tp(inp))


def point_to_subtensor(CTensor inp, start_coord, int coord_num, int first_out_dim_size, CTensor out,
                       bint cfg_null=False):
    cdef mli_point_to_subtsr_cfg cfg
    cdef mli_status st
    cdef Py_ssize_t delta
    coords = [int(c) for c in start_coord] + [0] * (4 - len(start_coord))
    if len(coords) != 4 or not 0 <= coord_num <= 255 or not 0 <= first_out_dim_size <= 255:
        raise ValueError("point_to_subtensor: start_coord has at most 4 entries, coord_num and "
                         "first_out_dim_size are in 0..255")
    for i in range(4):
        cfg.start_coord[i] = <uint32_t>coords[i]
    cfg.coord_num = <uint8_t>coord_num
    cfg.first_out_dim_size = <uint8_t>first_out_dim_size
    _prep(("in", "out"), (inp,), (), False)
    st = mli_hlp_point_to_subtensor(tp(inp), NULL if cfg_null else &cfg, tp(out))
    if st == MLI_STATUS_OK and out is not None and not out.is_null:
        # out now points into in's buffer: share (and pin) that memory
        delta = <char *>out.t.data - <char *>inp.t.data
        out.has_view = False
        out.base = inp.base
        out._owner = inp
        out.writable = inp.writable
        out.data_is_value = False
        out._offset = inp._offset + delta
        out.nbytes = inp.nbytes - delta
        out.generation += 1
    return <int>st


def convert_tensor(CTensor inp, CTensor out):
    cdef mli_status st
    _prep(("in", "out"), (inp,), (out,), False)
    cdef mli_tensor *p_inp = tp(inp)
    cdef mli_tensor *p_out = tp(out)
    with nogil:
        st = mli_hlp_convert_tensor(p_inp, p_out)
    return <int>st


def float_to_fx_tensor(const float[::1] src, CTensor dst):
    cdef mli_status st
    cdef uint32_t n = <uint32_t>src.shape[0]
    _prep(("dst",), (), (dst,), False)
    cdef mli_tensor *p_dst = tp(dst)
    with nogil:
        st = mli_hlp_float_to_fx_tensor(&src[0] if n else NULL, n, p_dst)
    return <int>st


def fx_tensor_to_float(CTensor src, float[::1] dst, uint32_t dst_size):
    cdef mli_status st
    if dst_size > <uint32_t>dst.shape[0]:
        raise BridgeError("dst_size", f"{dst_size} exceeds the {dst.shape[0]} floats of dst")
    _prep(("src",), (src,), (), False)
    cdef mli_tensor *p_src = tp(src)
    with nogil:
        st = mli_hlp_fx_tensor_to_float(p_src, &dst[0] if dst.shape[0] else NULL, dst_size)
    return <int>st
