# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""The bridge between numpy and the C core: it only marshals.

`CTensor` holds an `mli_tensor` struct and pins the memory its data points
into; the kernel wrappers pass those structs to C with the GIL released and
return the integer `mli_status`.  Python-side validation lives in `mli`."""
import threading

cimport cython
from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release, PyBuffer_IsContiguous, PyBUF_SIMPLE,
                             PyBUF_WRITABLE, PyBUF_RECORDS_RO)
from cpython.mem cimport PyMem_Realloc
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize
from cpython.pythread cimport (PyThread_type_lock, PyThread_allocate_lock, PyThread_free_lock,
                               PyThread_acquire_lock, PyThread_release_lock, NOWAIT_LOCK, WAIT_LOCK,
                               PyThread_get_thread_ident)
from libc.stdint cimport int8_t, int16_t, intptr_t, uint32_t, uint8_t
from libc.string cimport memcmp, memcpy, memset
from cpython.ref cimport PyObject
from ._mli cimport *


include "_bridge/tensor.pxi"
include "_bridge/calls.pxi"
include "_bridge/settings.pxi"
include "_bridge/api.pxi"
include "_bridge/fully_connected.pxi"
include "_bridge/cells.pxi"
include "_bridge/rnn.pxi"
include "_bridge/lstm.pxi"
include "_bridge/transform.pxi"
include "_bridge/eltwise.pxi"
include "_bridge/graph.pxi"
include "_bridge/helpers.pxi"
include "_bridge/prepared.pxi"
include "_bridge/rows.pxi"
include "_bridge/float_rnn.pxi"
# the rest of MLI 1.1 (mli/_variants_api.py): the generated tables of C functions, then one bridge per family
include "_bridge/tables.pxi"
include "_bridge/more.pxi"
include "_bridge/conv.pxi"
include "_bridge/pool.pxi"
include "_bridge/data.pxi"
include "_bridge/transform_more.pxi"
include "_bridge/fc_sa8.pxi"
