/* Tensor helpers and the argument checks of SPEC_MLI2.md 13.1. */
#include <string.h>
#include "mli2_prv.h"

int mli2_el_size(mli_element_type t) {
    switch (t) {
    case MLI_EL_FX_8:
    case MLI_EL_SA_8: return 1;
    case MLI_EL_FX_16: return 2;
    case MLI_EL_SA_32:
    case MLI_EL_FP_32: return 4;
    default: return 0;
    }
}

uint32_t mli2_count(const mli_tensor *t) {
    uint32_t n = 1;
    for (uint32_t i = 0; i < t->rank && i < MLI_MAX_RANK; i++) n *= t->shape[i];
    return n;
}

m2_fmt mli2_fmt(const mli_tensor *t, int idx) {
    if (!mli2_is_sa(t)) return m2_fmt_make(0, 1, t->el_params.fx.frac_bits);
    if (t->el_params.sa.dim < 0)
        return m2_fmt_make(t->el_params.sa.zero_point.mem.i16, t->el_params.sa.scale.mem.i16,
                           t->el_params.sa.scale_frac_bits.mem.i8);
    return m2_fmt_make(t->el_params.sa.zero_point.mem.pi16[idx], t->el_params.sa.scale.mem.pi16[idx],
                       t->el_params.sa.scale_frac_bits.mem.pi8[idx]);
}

/* MLI 2.0.2 computes the stride and size checks of TENSOR in 32 bits: the
 * products shape * mem_stride and the sum 1 + sum (shape - 1) * mem_stride
 * wrap modulo 2^32 and are compared as signed numbers, the element size
 * multiplied in (also wrapping) before the comparison with the capacity.  A
 * tensor whose true extent exceeds its capacity can pass that way; MLI's next
 * check then decides the status, and if it passes too, mli2_chk_reach refuses
 * the call before any access (mli-py's safety check). */
static int32_t wrap32_mul(uint32_t a, int32_t b) { return (int32_t)(a * (uint32_t)b); }

mli_status mli2_chk_tensor(const mli_tensor *t, const char *name) {
    if (!t) return mli2_fail(MLI_STATUS_BAD_TENSOR, name, "is NULL");
    if (!t->data.mem.ptr) return mli2_fail(MLI_STATUS_BAD_TENSOR, name, "data pointer is NULL");
    if (t->rank > MLI_MAX_RANK) return mli2_fail(MLI_STATUS_BAD_TENSOR, name, "rank above 4");
    if (t->data.capacity > (uint32_t)INT32_MAX) return mli2_fail(MLI_STATUS_BAD_TENSOR, name, "capacity above 2^31-1");
    for (uint32_t i = 0; i < t->rank; i++) {
        if (t->mem_stride[i] <= 0) return mli2_fail(MLI_STATUS_BAD_TENSOR, name, "mem_stride not positive");
        if (t->shape[i] == 0 || t->shape[i] > (uint32_t)INT32_MAX)
            return mli2_fail(MLI_STATUS_BAD_TENSOR, name, "shape entry 0 or above 2^31-1");
    }
    for (int i = (int)t->rank - 1; i >= 0; i--) {
        const int32_t inner = i == (int)t->rank - 1 ? 1 : wrap32_mul(t->shape[i + 1], t->mem_stride[i + 1]);
        if (t->mem_stride[i] < inner)
            return mli2_fail(MLI_STATUS_BAD_TENSOR, name, "mem_stride smaller than the inner dimension's extent");
    }
    uint32_t span = 1;
    for (uint32_t i = 0; i < t->rank; i++) span += (t->shape[i] - 1u) * (uint32_t)t->mem_stride[i];
    const int32_t need = (int32_t)(span * (uint32_t)mli2_el_size(t->el_type));
    if (need > (int64_t)t->data.capacity)
        return mli2_fail(MLI_STATUS_NOT_ENGH_MEM, name, "capacity below the extent of shape and mem_stride");
    return MLI_STATUS_OK;
}

uint64_t mli2_span(const mli_tensor *t) {
    uint64_t span = 1;
    for (uint32_t i = 0; i < t->rank && i < MLI_MAX_RANK; i++)
        span += (uint64_t)(t->shape[i] ? t->shape[i] - 1u : 0u) * (uint64_t)(t->mem_stride[i] > 0 ? t->mem_stride[i] : 0);
    return span;
}

mli_status mli2_chk_reach(const mli_tensor *t, const char *name, uint64_t elems) {
    const uint32_t esz = (uint32_t)mli2_el_size(t->el_type);
    if (esz && elems > t->data.capacity / esz)
        return mli2_refuse(MLI_STATUS_NOT_ENGH_MEM, name,
                           "the elements the kernel accesses lie beyond capacity (MLI 2.0.2's 32-bit size check "
                           "wraps around and passes; it would access memory outside the buffer)");
    return MLI_STATUS_OK;
}

mli_status mli2_chk_quant(const mli_tensor *t, const char *name, int zp_lo, int zp_hi) {
    if (!mli2_is_sa(t)) return MLI_STATUS_OK;
    const int32_t dim = t->el_params.sa.dim;
    const uint32_t zc = t->el_params.sa.zero_point.capacity, sc = t->el_params.sa.scale.capacity,
                   fc = t->el_params.sa.scale_frac_bits.capacity;
    uint32_t n = 1;
    if (dim >= 0) {
        if ((uint32_t)dim >= t->rank) return mli2_fail(MLI_STATUS_BAD_TENSOR, name, "sa dim not below the rank");
        n = t->shape[dim];
        if ((uint64_t)zc < 2ull * n || (uint64_t)sc < 2ull * n || fc < n)
            return mli2_fail(MLI_STATUS_BAD_TENSOR, name, "sa parameter containers below shape[dim] entries");
        if (!t->el_params.sa.zero_point.mem.pi16 || !t->el_params.sa.scale.mem.pi16 ||
            !t->el_params.sa.scale_frac_bits.mem.pi8)
            return mli2_refuse(MLI_STATUS_BAD_TENSOR, name, "sa parameter array pointer is NULL");
    } else if (zc || sc || fc) {
        return mli2_fail(MLI_STATUS_BAD_TENSOR, name, "per-tensor sa parameters must have capacity 0");
    }
    for (uint32_t k = 0; k < n; k++) {
        const m2_fmt f = mli2_fmt(t, (int)k);
        if (f.scale <= 0) return mli2_fail(MLI_STATUS_BAD_TENSOR, name, "sa scale not positive");
        if (f.zp < zp_lo || f.zp > zp_hi)
            return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, name, "zero point out of range");
    }
    return MLI_STATUS_OK;
}

int mli2_inner1(const mli_tensor *t) {
    if (t->rank == 0) return 1;
    if (t->rank > MLI_MAX_RANK) return 0;
    return t->mem_stride[t->rank - 1] == 1;
}

int mli2_contig(const mli_tensor *t) {
    if (t->rank == 0) return 1;
    if (t->rank > MLI_MAX_RANK) return 0;
    uint32_t dense = 1; /* MLI's dense strides wrap modulo 2^32 as well */
    for (int i = (int)t->rank - 1; i >= 0; i--) {
        if ((uint32_t)t->mem_stride[i] != dense) return 0;
        dense *= t->shape[i];
    }
    return 1;
}

int mli2_overlap(const void *a, uint32_t cap_a, const void *b, uint32_t cap_b) {
    const uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b;
    return pa < pb + cap_b && pb < pa + cap_a;
}

mli_status mli2_chk_biasscale(const mli_tensor *in, const mli_tensor *w, const mli_tensor *b, const char *name) {
    const int n = mli2_per_axis(w) ? (int)w->shape[w->el_params.sa.dim] : 1;
    const m2_fmt fi = mli2_fmt(in, 0);
    for (int k = 0; k < n; k++) {
        const m2_fmt fw = mli2_fmt(w, k), fb = mli2_fmt(b, k);
        int64_t e = (int32_t)((int64_t)fi.scale * fw.scale);
        const int sh = fi.shift + fw.shift - fb.shift;
        e = sh > 0 ? m2_rshr(e, sh, 32) : m2_shl(e, -sh, 64);
        if (e - fb.scale > 1 || fb.scale - e > 1)
            return mli2_fail(MLI_STATUS_INCOMPATEBLE_TENSORS, name, "scale does not match in.scale * weights.scale");
    }
    return MLI_STATUS_OK;
}

mli_status mli2_chk_lut(const mli_lut *lut, const char *name) {
    if (!lut) return mli2_refuse(MLI_STATUS_BAD_FUNC_CFG, name, "LUT object is NULL");
    if (!lut->data.mem.pi16) return mli2_refuse(MLI_STATUS_BAD_FUNC_CFG, name, "LUT data pointer is NULL");
    if (lut->type != MLI_EL_FX_16 || lut->length < 2)
        return mli2_refuse(MLI_STATUS_BAD_FUNC_CFG, name, "not a LUT made by *_create_lut");
    if ((int64_t)lut->data.capacity < 2 * (int64_t)lut->length)
        return mli2_refuse(MLI_STATUS_NOT_ENGH_MEM, name, "LUT length exceeds its capacity");
    return MLI_STATUS_OK;
}

/* ------------------------------------------------------------ aliasing (mli-py's own check)
 * MLI 2.0.2 writes its outputs (and the cells their scratch and cell) while
 * it still reads its operands, in an order of its own; mli-py reads the
 * operands ahead, so where an output shares bytes with an operand the two
 * would compute different things.  The layouts mli-py reproduces (out over
 * in, out over prev_out, tanh/sigm in place) are not checked here. */
m2_rgn m2_rgn_of(const void *p, uint64_t nbytes, const char *name) {
    m2_rgn r;
    r.a = (uintptr_t)p;
    r.b = r.a + (uintptr_t)nbytes;
    r.name = name;
    return r;
}

int mli2_rgn_tensor(m2_rgn *r, const mli_tensor *t, uint64_t elems, const char *name) {
    int n = 0;
    r[n++] = m2_rgn_of(t->data.mem.ptr, elems * (uint64_t)mli2_el_size(t->el_type), name);
    if (mli2_per_axis(t) && (uint32_t)t->el_params.sa.dim < t->rank) {
        const uint64_t k = t->shape[t->el_params.sa.dim];
        r[n++] = m2_rgn_of(t->el_params.sa.zero_point.mem.pi16, 2 * k, name);
        r[n++] = m2_rgn_of(t->el_params.sa.scale.mem.pi16, 2 * k, name);
        r[n++] = m2_rgn_of(t->el_params.sa.scale_frac_bits.mem.pi8, k, name);
    }
    return n;
}

int mli2_rgn_overlap(m2_rgn x, m2_rgn y) { return x.a < y.b && y.a < x.b; }

mli_status mli2_chk_alias(const char *arg, const char *what, m2_rgn w, const m2_rgn *reads, int n) {
    for (int i = 0; i < n; i++)
        if (mli2_rgn_overlap(w, reads[i])) return mli2_refuse_overlap(arg, what, reads[i].name);
    return MLI_STATUS_OK;
}
