/* mli-py: build configuration of the C core.
 *
 * MLI 1.1 selects a platform and a debug mode here; mli-py has one
 * configuration: checks always on (as MLI's DBG_MODE_RET_CODES), portable C,
 * and the DSP rounding mode chosen at run time (mlipy_set_rounding). */
#ifndef MLI_CONFIG_H
#define MLI_CONFIG_H

#define MLI_MAX_RANK 4

/* Thread-local storage for the error-detail record. */
#if defined(_MSC_VER)
#define MLIPY_THREAD_LOCAL __declspec(thread)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__STDC_NO_THREADS__)
#define MLIPY_THREAD_LOCAL _Thread_local
#else
#define MLIPY_THREAD_LOCAL __thread
#endif

#endif /* MLI_CONFIG_H */
