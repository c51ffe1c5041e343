/* Per-function instruction-set versions of plain C loops.
 *
 * MLIPY_MULTIVERSION(name, (params), (args)) defines name##_scalar /
 * _avx2 / _avx512 wrappers around the always-inline body name##_body, each
 * compiled with its own target attribute (never for the build machine), and
 * `name` dispatching on mlipy_get_isa().  The body is written branch-free so
 * that the compiler vectorizes it; every version computes the same integers. */
#ifndef MLI_PRV_ISA_H
#define MLI_PRV_ISA_H

#include "mlipy_ext.h"

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define MLIPY_X86_TARGETS 1
#define MLIPY_ALWAYS_INLINE static inline __attribute__((always_inline))
#define MLIPY_MULTIVERSION(ret, name, params, args) MLIPY_MV_(ret, name, params, args)
#define MLIPY_MV_(ret, name, params, args)                                                     \
    static ret name##_scalar params { return name##_body args; }                                \
    __attribute__((target("avx2"))) static ret name##_avx2 params { return name##_body args; }  \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static ret name##_avx512 params { \
        return name##_body args;                                                                \
    }                                                                                           \
    static ret name params {                                                                    \
        switch (mlipy_get_isa()) {                                                              \
        case 2: return name##_avx512 args;                                                      \
        case 1: return name##_avx2 args;                                                        \
        default: return name##_scalar args;                                                     \
        }                                                                                       \
    }
/* The same for a body returning nothing (ISO C has no `return` of a void expression). */
#define MLIPY_MULTIVERSION_VOID(name, params, args) MLIPY_MVV_(name, params, args)
#define MLIPY_MVV_(name, params, args)                                                          \
    static void name##_scalar params { name##_body args; }                                      \
    __attribute__((target("avx2"))) static void name##_avx2 params { name##_body args; }        \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) static void name##_avx512 params { \
        name##_body args;                                                                       \
    }                                                                                           \
    static void name params {                                                                   \
        switch (mlipy_get_isa()) {                                                              \
        case 2: name##_avx512 args; break;                                                      \
        case 1: name##_avx2 args; break;                                                        \
        default: name##_scalar args; break;                                                     \
        }                                                                                       \
    }
#else
#define MLIPY_ALWAYS_INLINE static inline
#define MLIPY_MULTIVERSION(ret, name, params, args) MLIPY_MV_(ret, name, params, args)
#define MLIPY_MV_(ret, name, params, args) \
    static ret name params { return name##_body args; }
#define MLIPY_MULTIVERSION_VOID(name, params, args) MLIPY_MVV_(name, params, args)
#define MLIPY_MVV_(name, params, args) \
    static void name params { name##_body args; }
#endif

#endif
