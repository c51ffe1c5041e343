/* Exact column dot products of the 2.x weight layout (N rows of M outputs,
 * outputs innermost): one version per instruction set, chosen at run time by
 * the ISA switch shared with the MLI 1.1 core's dot products (compiled into
 * this library from csrc/src/private/mli_prv_dotprod.c).  Bodies are plain
 * loops over the outputs that the compiler vectorizes; every version sums
 * the same integers exactly in int64. */
#include "mli2_prv.h"

int mlipy_get_isa(void); /* csrc/src/private/mli_prv_dotprod.c */
int mlipy_set_isa(int isa);
int mlipy_isa_supported(int isa);

int mlipy2_get_isa(void) { return mlipy_get_isa(); }
int mlipy2_set_isa(int isa) { return mlipy_set_isa(isa); }
int mlipy2_isa_supported(int isa) { return mlipy_isa_supported(isa); }

#define DOT_BODY(XT, WT)                                                          \
    for (int o = 0; o < M; o++) sums[o] = 0;                                      \
    for (int j = 0; j < n; j++) {                                                 \
        const int32_t xj = x[j];                                                  \
        const WT *w = W + (long)j * ws;                                           \
        for (int o = 0; o < M; o++) sums[o] += (int64_t)(xj * (int32_t)w[o]);     \
    }

#define COLSUM_BODY                                                               \
    for (int o = 0; o < M; o++) sums[o] = 0;                                      \
    for (int j = 0; j < n; j++) {                                                 \
        const int8_t *w = W + (long)j * ws;                                       \
        for (int o = 0; o < M; o++) sums[o] += w[o];                              \
    }

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define MV_TARGET_AVX2 __attribute__((target("avx2")))
#define MV_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define MV_DEFINE(name, params, args, body)                                                 \
    static void name##_scalar params { body }                                              \
    MV_TARGET_AVX2 static void name##_avx2 params { body }                                 \
    MV_TARGET_AVX512 static void name##_avx512 params { body }                             \
    void name params {                                                                      \
        switch (mlipy_get_isa()) {                                                          \
        case 2: name##_avx512 args; return;                                                 \
        case 1: name##_avx2 args; return;                                                   \
        default: name##_scalar args; return;                                                \
        }                                                                                   \
    }
#else
#define MV_DEFINE(name, params, args, body) void name params { body }
#endif

MV_DEFINE(mli2_dot_cols_16_16, (const int16_t *x, int n, const int16_t *W, long ws, int M, int64_t *sums),
          (x, n, W, ws, M, sums), DOT_BODY(int16_t, int16_t))
MV_DEFINE(mli2_dot_cols_16_8, (const int16_t *x, int n, const int8_t *W, long ws, int M, int64_t *sums),
          (x, n, W, ws, M, sums), DOT_BODY(int16_t, int8_t))
MV_DEFINE(mli2_dot_cols_8_8, (const int8_t *x, int n, const int8_t *W, long ws, int M, int64_t *sums),
          (x, n, W, ws, M, sums), DOT_BODY(int8_t, int8_t))
MV_DEFINE(mli2_colsum_8, (const int8_t *W, int n, long ws, int M, int64_t *sums), (W, n, ws, M, sums), COLSUM_BODY)
