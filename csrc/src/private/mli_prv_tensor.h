/* Element counts and layout predicates of SPEC.md section 12.1. */
#ifndef MLI_PRV_TENSOR_H
#define MLI_PRV_TENSOR_H

#include <stdbool.h>
#include <stdint.h>
#include "mli_types.h"

static inline uint32_t mli_prv_elsize(mli_element_type t) {
    switch (t) {
    case MLI_EL_FX_8: case MLI_EL_ASYM_I8: return 1;
    case MLI_EL_FX_16: return 2;
    case MLI_EL_ASYM_I32: return 4;
    default: return 0;
    }
}

/* Product of shape[from..rank-1] (rank 0: 1), saturated at 2^40 so that
 * absurd shapes compare as huge instead of wrapping around (2^40 times an
 * element size stays far inside uint64; no capacity reaches it). */
#define MLI_PRV_COUNT_MAX ((uint64_t)1 << 40)
static inline uint64_t mli_prv_count(const mli_tensor *t, uint32_t from) {
    uint64_t n = 1;
    uint32_t r = t->rank > MLI_MAX_RANK ? MLI_MAX_RANK : t->rank;
    for (uint32_t i = from; i < r; i++) {
        const uint64_t s = t->shape[i];
        if (s == 0) return 0;
        n = n > MLI_PRV_COUNT_MAX / s ? MLI_PRV_COUNT_MAX : n * s; /* checked before multiplying */
    }
    return n;
}

/* CONTIG over the first n entries of shape and stride (n entries readable). */
static inline bool mli_prv_contig_n(const uint32_t *shape, const int32_t *stride, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (stride[i] == 0) return true;
    int64_t dense = 1;
    for (uint32_t i = n; i-- > 0;) {
        if (stride[i] != dense) return false;
        dense *= shape[i];
    }
    return true;
}
/* CONTIG(shape, stride, rank). */
static inline bool mli_prv_contig(const uint32_t *shape, const int32_t *stride, uint32_t rank) {
    return mli_prv_contig_n(shape, stride, rank > MLI_MAX_RANK ? MLI_MAX_RANK : rank);
}
static inline bool mli_prv_contig_t(const mli_tensor *t) {
    return mli_prv_contig(t->shape, t->mem_stride, t->rank);
}
/* CONTIG_R(stride, rank). */
static inline bool mli_prv_contig_r(const int32_t *stride, uint32_t rank) {
    if (rank > MLI_MAX_RANK) rank = MLI_MAX_RANK;
    for (uint32_t i = 0; i < rank; i++)
        if (stride[i] == 0) return true;
    return rank == 1 && stride[0] == 1;
}

#endif /* MLI_PRV_TENSOR_H */
