/* What the CPython guest's training build (wasm-guests/cpython/pgo/README.md) adds to compiler-rt's
 * profile runtime: where the instrumentation's data is, and a writer that hands the whole raw
 * profile to the guest's C.
 *
 * compiler-rt 19, the runtime this is built with, knows no wasm platform. wasm-ld names the bounds
 * of each data segment whose name is a C identifier `__start_<name>` and `__stop_<name>`, as ELF
 * linkers do, so the bounds come from those. They are weak: a section nothing was put in (virtual
 * tables, bitmaps) has no symbols, and reads as empty. */

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "InstrProfiling.h"
#include "InstrProfilingInternal.h"

/* Referenced by every instrumented object so that linking pulls the runtime in. compiler-rt's
 * own definition also registers a write at exit: the guest never exits, so the training program
 * asks for the profile itself (`_codecell_host.pgo_profile`). */
int __llvm_profile_runtime;

#define BOUNDS(type, section)                                                                      \
    extern type __start_##section __attribute__((weak, visibility("hidden")));                     \
    extern type __stop_##section __attribute__((weak, visibility("hidden")));

BOUNDS(char, __llvm_prf_data)
BOUNDS(char, __llvm_prf_names)
BOUNDS(char, __llvm_prf_vns)
BOUNDS(char, __llvm_prf_cnts)
BOUNDS(char, __llvm_prf_vtab)
BOUNDS(char, __llvm_prf_bits)
BOUNDS(char, __llvm_prf_vnds)

const __llvm_profile_data *__llvm_profile_begin_data(void) {
    return (const __llvm_profile_data *)&__start___llvm_prf_data;
}
const __llvm_profile_data *__llvm_profile_end_data(void) {
    return (const __llvm_profile_data *)&__stop___llvm_prf_data;
}
const char *__llvm_profile_begin_names(void) { return &__start___llvm_prf_names; }
const char *__llvm_profile_end_names(void) { return &__stop___llvm_prf_names; }
const char *__llvm_profile_begin_vtabnames(void) { return &__start___llvm_prf_vns; }
const char *__llvm_profile_end_vtabnames(void) { return &__stop___llvm_prf_vns; }
char *__llvm_profile_begin_counters(void) { return &__start___llvm_prf_cnts; }
char *__llvm_profile_end_counters(void) { return &__stop___llvm_prf_cnts; }
char *__llvm_profile_begin_bitmap(void) { return &__start___llvm_prf_bits; }
char *__llvm_profile_end_bitmap(void) { return &__stop___llvm_prf_bits; }
const VTableProfData *__llvm_profile_begin_vtables(void) {
    return (const VTableProfData *)&__start___llvm_prf_vtab;
}
const VTableProfData *__llvm_profile_end_vtables(void) {
    return (const VTableProfData *)&__stop___llvm_prf_vtab;
}
ValueProfNode *__llvm_profile_begin_vnodes(void) { return (ValueProfNode *)&__start___llvm_prf_vnds; }
ValueProfNode *__llvm_profile_end_vnodes(void) { return (ValueProfNode *)&__stop___llvm_prf_vnds; }
ValueProfNode *CurrentVNode = (ValueProfNode *)&__start___llvm_prf_vnds;
ValueProfNode *EndVNode = (ValueProfNode *)&__stop___llvm_prf_vnds;

/* A wasm module has no build id to write. */
int __llvm_write_binary_ids(ProfDataWriter *writer) {
    (void)writer;
    return 0;
}

/* The value profiler's two atomic helpers, which compiler-rt keeps in InstrProfilingUtil.c beside
 * file locking WASI has no call for. A guest runs one thread, so plain loads and stores do. */
unsigned lprofBoolCmpXchg(void **ptr, void *old_value, void *new_value) {
    if (*ptr != old_value) {
        return 0;
    }
    *ptr = new_value;
    return 1;
}

void *lprofPtrFetchAdd(void **mem, long increment) {
    void *old = *mem;
    *mem = (char *)old + increment;
    return old;
}

/* A growing buffer, the context of `append`. */
typedef struct {
    char *ptr;
    size_t len;
    size_t cap;
} profile_buf;

/* compiler-rt's writer callback: appends each vector (or its length of zeros) to the buffer.
 * Returns 0, or 1 when memory runs out. */
static uint32_t append(ProfDataWriter *writer, ProfDataIOVec *vecs, uint32_t count) {
    profile_buf *buf = writer->WriterCtx;
    for (uint32_t i = 0; i < count; i++) {
        size_t len = vecs[i].ElmSize * vecs[i].NumElm;
        if (buf->len + len > buf->cap) {
            size_t cap = buf->cap * 2 > buf->len + len ? buf->cap * 2 : buf->len + len + 65536;
            char *grown = realloc(buf->ptr, cap);
            if (grown == NULL) {
                return 1;
            }
            buf->ptr = grown;
            buf->cap = cap;
        }
        if (vecs[i].Data != NULL) {
            memcpy(buf->ptr + buf->len, vecs[i].Data, len);
        } else {
            memset(buf->ptr + buf->len, 0, len);
        }
        buf->len += len;
    }
    return 0;
}

/* The raw profile of everything run so far, value profiles included (compiler-rt's
 * `__llvm_profile_write_buffer` leaves those out, and llvm-profdata then reads the profile as
 * truncated). Returns 0 with a malloc'd buffer in `*out`, or -1. */
int codecell_pgo_profile(char **out, size_t *len) {
    profile_buf buf = {NULL, 0, 0};
    ProfDataWriter writer = {append, &buf};
    if (lprofWriteData(&writer, lprofGetVPDataReader(), 0) != 0) {
        free(buf.ptr);
        return -1;
    }
    *out = buf.ptr;
    *len = buf.len;
    return 0;
}
