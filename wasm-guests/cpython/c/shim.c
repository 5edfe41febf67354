/* The CPython side of the CPython guest: the interpreter's start-up, the native module
 * `_codecell_host` (the WIT imports, which src/host.rs implements), and the calls into the
 * Python half (`_codecell_app`) that src/lib.rs makes for each export.
 *
 * Every buffer that crosses to Rust is malloc'd here or there and freed by the receiver with
 * free(): both sides use the same libc allocator. Strings are UTF-8 with a length, never
 * NUL-terminated.
 */

#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A byte buffer handed from one side to the other; the receiver frees `ptr`. */
typedef struct {
    uint8_t *ptr;
    size_t len;
} cc_buf;

/* An exception that ended a run: the WIT `failure` record. `line` is -1 for none. */
typedef struct {
    cc_buf kind;
    cc_buf message;
    cc_buf traceback;
    int64_t line;
} cc_failure;

/* The WIT imports, in src/host.rs. Each returns 1 with the value in `out` or 0 with the host's
 * error message there. A list of strings is encoded as (u32 little-endian length, bytes)*; the
 * completions of `wait` as (u64 handle, u8 ok, u32 length, bytes)*. */
extern int32_t cc_host_ls(const uint8_t *path, size_t len, cc_buf *out);
extern int32_t cc_host_read(const uint8_t *path, size_t len, cc_buf *out);
extern int32_t cc_host_call_tool(const uint8_t *category, size_t category_len, const uint8_t *name,
                                 size_t name_len, const uint8_t *args, size_t args_len, cc_buf *out);
extern int32_t cc_host_start_tool_call(const uint8_t *category, size_t category_len,
                                       const uint8_t *name, size_t name_len, const uint8_t *args,
                                       size_t args_len, uint64_t *handle, cc_buf *out);
extern void cc_host_wait_tool_calls(int32_t has_timeout, uint64_t timeout_us, cc_buf *out);
extern void cc_host_cancel_tool_call(uint64_t handle);

/* WASI's emulated process clocks (`clock()`, CLOCK_PROCESS_CPUTIME_ID, which `time.process_time`
 * reads) come as a preview 1 library that reads the time through preview 1's `clock_time_get`;
 * the preview 2 libc this guest links has no such function, so this one stands in, with the
 * monotonic clock (a run is one process with one thread: the two differ only by idle time). */
uint16_t __wasi_clock_time_get(uint32_t id, uint64_t precision, uint64_t *out) {
    (void)id;
    (void)precision;
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        return 28; /* EINVAL */
    }
    *out = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return 0;
}

/* The app module, imported once by cc_init. */
static PyObject *app = NULL;
/* What cc_init failed with, kept for every later export call (as the RustPython guest does). */
static cc_failure init_failure;
static int init_state = 0; /* 0 not yet, 1 ready, 2 failed */

static cc_buf buf_copy(const char *data, size_t len) {
    cc_buf b = {NULL, 0};
    b.ptr = malloc(len ? len : 1);
    if (b.ptr) {
        memcpy(b.ptr, data, len);
        b.len = len;
    }
    return b;
}

static cc_buf buf_str(const char *s) { return buf_copy(s, strlen(s)); }

static PyObject *decode(const cc_buf *b) {
    PyObject *s = PyUnicode_DecodeUTF8((const char *)b->ptr, (Py_ssize_t)b->len, "replace");
    free(b->ptr);
    return s;
}

/* (True, value) or (False, message), stealing `value`. */
static PyObject *outcome(int ok, PyObject *value) {
    if (value == NULL) {
        return NULL;
    }
    return Py_BuildValue("(ON)", ok ? Py_True : Py_False, value);
}

/* The host's list answers are records, each a fixed header whose last four bytes are the
 * length of the bytes that follow it. Decodes them into a list, one item a record from
 * `item(header, body, len)`; a truncated record ends the list. NULL with an exception set when an
 * item cannot be made. */
static PyObject *decode_records(const cc_buf *b, size_t header,
                                PyObject *(*item)(const uint8_t *, const char *, uint32_t)) {
    PyObject *list = PyList_New(0);
    size_t at = 0;
    while (list != NULL && at + header <= b->len) {
        const uint8_t *head = b->ptr + at;
        uint32_t n;
        memcpy(&n, head + header - 4, 4);
        at += header;
        if (n > b->len - at) {
            break;
        }
        PyObject *value = item(head, (const char *)b->ptr + at, n);
        at += n;
        if (value == NULL || PyList_Append(list, value) < 0) {
            Py_XDECREF(value);
            Py_CLEAR(list);
            break;
        }
        Py_DECREF(value);
    }
    return list;
}

/* An `ls` entry: a name, decoded with replacement (the host sends UTF-8). Its header is the
 * length alone. */
#define LS_ENTRY_HEADER 4
static PyObject *ls_entry(const uint8_t *head, const char *body, uint32_t len) {
    (void)head;
    return PyUnicode_DecodeUTF8(body, len, "replace");
}

/* A finished tool call: (handle, ok, JSON text). Its header is a handle (8 bytes), an ok flag
 * (1 byte) and the length. */
#define FINISHED_CALL_HEADER 13
static PyObject *finished_call(const uint8_t *head, const char *body, uint32_t len) {
    uint64_t handle;
    memcpy(&handle, head, 8);
    return Py_BuildValue("(KOs#)", (unsigned long long)handle, head[8] ? Py_True : Py_False, body,
                         (Py_ssize_t)len);
}

static PyObject *host_ls(PyObject *self, PyObject *args) {
    const char *path;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "s#:ls", &path, &len)) {
        return NULL;
    }
    cc_buf out = {NULL, 0};
    int ok = cc_host_ls((const uint8_t *)path, (size_t)len, &out);
    if (!ok) {
        return outcome(0, decode(&out));
    }
    PyObject *list = decode_records(&out, LS_ENTRY_HEADER, ls_entry);
    free(out.ptr);
    return outcome(1, list);
}

static PyObject *host_read(PyObject *self, PyObject *args) {
    const char *path;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "s#:read", &path, &len)) {
        return NULL;
    }
    cc_buf out = {NULL, 0};
    int ok = cc_host_read((const uint8_t *)path, (size_t)len, &out);
    return outcome(ok, decode(&out));
}

static PyObject *host_call_tool(PyObject *self, PyObject *args) {
    const char *category, *name, *json;
    Py_ssize_t category_len, name_len, json_len;
    if (!PyArg_ParseTuple(args, "s#s#s#:call_tool", &category, &category_len, &name, &name_len,
                          &json, &json_len)) {
        return NULL;
    }
    cc_buf out = {NULL, 0};
    int ok = cc_host_call_tool((const uint8_t *)category, category_len, (const uint8_t *)name,
                               name_len, (const uint8_t *)json, json_len, &out);
    return outcome(ok, decode(&out));
}

static PyObject *host_start_tool_call(PyObject *self, PyObject *args) {
    const char *category, *name, *json;
    Py_ssize_t category_len, name_len, json_len;
    if (!PyArg_ParseTuple(args, "s#s#s#:start_tool_call", &category, &category_len, &name,
                          &name_len, &json, &json_len)) {
        return NULL;
    }
    cc_buf out = {NULL, 0};
    uint64_t handle = 0;
    int ok = cc_host_start_tool_call((const uint8_t *)category, category_len,
                                     (const uint8_t *)name, name_len, (const uint8_t *)json,
                                     json_len, &handle, &out);
    if (ok) {
        free(out.ptr);
        return outcome(1, PyLong_FromUnsignedLongLong(handle));
    }
    return outcome(0, decode(&out));
}

static PyObject *host_wait_tool_calls(PyObject *self, PyObject *args) {
    PyObject *timeout = Py_None;
    if (!PyArg_ParseTuple(args, "|O:wait_tool_calls", &timeout)) {
        return NULL;
    }
    uint64_t timeout_us = 0;
    int has_timeout = timeout != Py_None;
    if (has_timeout) {
        timeout_us = PyLong_AsUnsignedLongLong(timeout);
        if (timeout_us == (uint64_t)-1 && PyErr_Occurred()) {
            return NULL;
        }
    }
    cc_buf out = {NULL, 0};
    cc_host_wait_tool_calls(has_timeout, timeout_us, &out);
    PyObject *list = decode_records(&out, FINISHED_CALL_HEADER, finished_call);
    free(out.ptr);
    return list;
}

static PyObject *host_cancel_tool_call(PyObject *self, PyObject *args) {
    unsigned long long handle;
    if (!PyArg_ParseTuple(args, "K:cancel_tool_call", &handle)) {
        return NULL;
    }
    cc_host_cancel_tool_call(handle);
    Py_RETURN_NONE;
}

#ifdef CODECELL_PGO_GENERATE
/* In the training build's profile runtime (wasm-guests/cpython/pgo/platform.c). */
extern int codecell_pgo_profile(char **out, size_t *len);

/* The raw profile of everything this instance has run so far, as bytes. */
static PyObject *host_pgo_profile(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    char *profile;
    size_t len;
    if (codecell_pgo_profile(&profile, &len) != 0) {
        return PyErr_NoMemory();
    }
    PyObject *bytes = PyBytes_FromStringAndSize(profile, (Py_ssize_t)len);
    free(profile);
    return bytes;
}
#endif

static PyMethodDef host_methods[] = {
    {"ls", host_ls, METH_VARARGS, "Lists a directory of the tool tree: (True, names) or (False, message)."},
    {"read", host_read, METH_VARARGS, "Reads a file of the tool tree: (True, text) or (False, message)."},
    {"call_tool", host_call_tool, METH_VARARGS, "Calls a host tool: (True, JSON) or (False, message)."},
    {"start_tool_call", host_start_tool_call, METH_VARARGS, "Starts a tool call: (True, handle) or (False, message)."},
    {"wait_tool_calls", host_wait_tool_calls, METH_VARARGS, "Waits for started calls: [(handle, ok, value)]."},
    {"cancel_tool_call", host_cancel_tool_call, METH_VARARGS, "Drops a started call."},
#ifdef CODECELL_PGO_GENERATE
    {"pgo_profile", host_pgo_profile, METH_NOARGS, "The raw profile of this instance's runs so far."},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef host_module = {
    PyModuleDef_HEAD_INIT, "_codecell_host", "The WIT imports of codecell's sandbox world.", -1,
    host_methods,
};

static PyObject *init_host_module(void) { return PyModule_Create(&host_module); }

/* Parses the frozen-module blob src/lib.rs embeds (built by ../freeze.py):
 * u32 count, then per module u32 name length, name, u8 is_package, u32 code length, marshal data.
 * The table points into the blob, which lives as long as the instance. */
static int install_frozen(const uint8_t *blob, size_t len) {
    uint32_t count;
    size_t at = 4;
    if (len < 4) {
        return -1;
    }
    memcpy(&count, blob, 4);
    struct _frozen *table = calloc((size_t)count + 1, sizeof(struct _frozen));
    if (table == NULL) {
        return -1;
    }
    for (uint32_t i = 0; i < count; i++) {
        uint32_t name_len, code_len;
        if (at + 4 > len) return -1;
        memcpy(&name_len, blob + at, 4);
        at += 4;
        if (name_len > len - at || at + name_len + 5 > len) return -1;
        char *name = malloc(name_len + 1);
        if (name == NULL) return -1;
        memcpy(name, blob + at, name_len);
        name[name_len] = 0;
        at += name_len;
        int is_package = blob[at];
        at += 1;
        memcpy(&code_len, blob + at, 4);
        at += 4;
        if (code_len > len - at) return -1;
        table[i].name = name;
        table[i].code = blob + at;
        table[i].size = (int)code_len;
        table[i].is_package = is_package;
        at += code_len;
    }
    PyImport_FrozenModules = table;
    return 0;
}

/* Fills `out` from the exception set (which is cleared): kind, message, and its traceback text. */
static void failure_from_error(const char *what, cc_failure *out) {
    PyObject *exc = PyErr_GetRaisedException();
    const char *kind = exc ? Py_TYPE(exc)->tp_name : "SystemError";
    out->kind = buf_str(kind);
    out->line = -1;
    PyObject *text = exc ? PyObject_Str(exc) : NULL;
    Py_ssize_t n = 0;
    const char *utf8 = text ? PyUnicode_AsUTF8AndSize(text, &n) : NULL;
    if (utf8 == NULL) {
        PyErr_Clear();
        utf8 = "";
        n = 0;
    }
    size_t msg_len = strlen(what) + (size_t)n + 3;
    char *msg = malloc(msg_len);
    if (msg) {
        snprintf(msg, msg_len, "%s: %s", what, utf8);
        out->message = buf_str(msg);
        free(msg);
    }
    out->traceback = buf_copy(utf8, (size_t)n);
    Py_XDECREF(text);
    Py_XDECREF(exc);
}

/* Records a start-up failure that has no Python exception behind it. */
static int start_failed(const char *message) {
    init_failure.kind = buf_str("GuestStartError");
    init_failure.message = buf_str(message);
    init_failure.traceback = buf_str("");
    init_failure.line = -1;
    return -1;
}

static int start(const uint8_t *blob, size_t len) {
    if (install_frozen(blob, len) < 0) {
        return start_failed("the CPython guest's frozen stdlib is malformed");
    }
    if (PyImport_AppendInittab("_codecell_host", init_host_module) < 0) {
        return start_failed("the CPython guest could not register `_codecell_host`");
    }
    PyConfig config;
    PyConfig_InitIsolatedConfig(&config);
    config.site_import = 0;
    config.write_bytecode = 0;
    config.pathconfig_warnings = 0;
    config.install_signal_handlers = 0;
    config.parse_argv = 0;
    config.safe_path = 1;
    config.use_frozen_modules = 1;
    config.module_search_paths_set = 1; /* an empty sys.path: every import is frozen or built in */
    config.buffered_stdio = 1;
    PyStatus status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        const char *msg = status.err_msg ? status.err_msg : "unknown error";
        char text[512];
        snprintf(text, sizeof text, "the CPython guest failed to start: %s", msg);
        return start_failed(text);
    }
    app = PyImport_ImportModule("_codecell_app");
    if (app == NULL) {
        failure_from_error("the CPython guest failed to import its app", &init_failure);
        free(init_failure.kind.ptr);
        init_failure.kind = buf_str("GuestStartError");
        return -1;
    }
    return 0;
}

static cc_failure copy_failure(const cc_failure *f) {
    cc_failure c;
    c.kind = buf_copy((const char *)f->kind.ptr, f->kind.len);
    c.message = buf_copy((const char *)f->message.ptr, f->message.len);
    c.traceback = buf_copy((const char *)f->traceback.ptr, f->traceback.len);
    c.line = f->line;
    return c;
}

/* Starts the interpreter once (the first call does the work). 0 when ready; otherwise 1 with
 * the start-up failure, which every later call gives again. */
int32_t cc_init(const uint8_t *blob, size_t len, cc_failure *out) {
    if (init_state == 0) {
        init_state = start(blob, len) == 0 ? 1 : 2;
    }
    if (init_state == 1) {
        return 0;
    }
    if (out != NULL) {
        *out = copy_failure(&init_failure);
    }
    return 1;
}

static cc_buf text_of(PyObject *obj) {
    Py_ssize_t n = 0;
    const char *utf8 = (obj && PyUnicode_Check(obj)) ? PyUnicode_AsUTF8AndSize(obj, &n) : NULL;
    if (utf8 == NULL) {
        PyErr_Clear();
        return buf_copy("", 0);
    }
    return buf_copy(utf8, (size_t)n);
}

/* Reads the (kind, message, traceback, line) tuple the Python half returns for a failure. */
static void failure_from_tuple(PyObject *t, cc_failure *out) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 4) {
        out->kind = buf_str("SystemError");
        out->message = buf_str("the guest returned a malformed failure");
        out->traceback = buf_str("");
        out->line = -1;
        return;
    }
    out->kind = text_of(PyTuple_GET_ITEM(t, 0));
    out->message = text_of(PyTuple_GET_ITEM(t, 1));
    out->traceback = text_of(PyTuple_GET_ITEM(t, 2));
    PyObject *line = PyTuple_GET_ITEM(t, 3);
    out->line = -1;
    if (PyLong_Check(line)) {
        long long v = PyLong_AsLongLong(line);
        if (v >= 0 && v <= UINT32_MAX) {
            out->line = v;
        }
        PyErr_Clear();
    }
}

static PyObject *options_tuple(const uint32_t options[4]) {
    return Py_BuildValue("(IIII)", options[0], options[1], options[2], options[3]);
}

/* Runs `run_snippet` (cell 0) or `run_cell` (cell 1): 0 on success, 1 with `out` filled. */
int32_t cc_run_code(int32_t cell, const uint8_t *code, size_t len, const uint32_t options[4],
                    cc_failure *out) {
    PyObject *result = PyObject_CallMethod(app, cell ? "run_cell" : "run_snippet", "(s#N)",
                                           (const char *)code, (Py_ssize_t)len,
                                           options_tuple(options));
    if (result == NULL) {
        failure_from_error("the guest's export raised", out);
        return 1;
    }
    int failed = result != Py_None;
    if (failed) {
        failure_from_tuple(result, out);
    }
    Py_DECREF(result);
    return failed;
}

/* Runs a dynamic tool: 0 with the JSON in `json`, 1 with `out` filled, 2 with the result's
 * length in `too_large`. `imports` holds `count` (pointer, length) pairs. */
int32_t cc_run_tool(const uint8_t *source, size_t source_len, const cc_buf *imports, size_t count,
                    const uint8_t *args, size_t args_len, const uint32_t options[4], cc_buf *json,
                    cc_failure *out, uint64_t *too_large) {
    PyObject *names = PyList_New((Py_ssize_t)count);
    for (size_t i = 0; names != NULL && i < count; i++) {
        PyObject *name =
            PyUnicode_DecodeUTF8((const char *)imports[i].ptr, (Py_ssize_t)imports[i].len, "replace");
        if (name == NULL) {
            Py_CLEAR(names);
            break;
        }
        PyList_SET_ITEM(names, (Py_ssize_t)i, name);
    }
    PyObject *result = names == NULL ? NULL
                                     : PyObject_CallMethod(app, "run_tool", "(s#Ns#N)",
                                                           (const char *)source,
                                                           (Py_ssize_t)source_len, names,
                                                           (const char *)args, (Py_ssize_t)args_len,
                                                           options_tuple(options));
    if (result == NULL) {
        failure_from_error("the guest's export raised", out);
        return 1;
    }
    int32_t code = 1;
    if (PyTuple_Check(result) && PyTuple_GET_SIZE(result) == 2) {
        PyObject *ok = PyTuple_GET_ITEM(result, 0);
        PyObject *value = PyTuple_GET_ITEM(result, 1);
        if (ok == Py_True) {
            *json = text_of(value);
            code = 0;
        } else if (PyLong_Check(value)) {
            unsigned long long chars = PyLong_AsUnsignedLongLong(value);
            if (PyErr_Occurred()) {
                PyErr_Clear();
                chars = UINT64_MAX;
            }
            *too_large = chars;
            code = 2;
        } else {
            failure_from_tuple(value, out);
        }
    } else {
        failure_from_tuple(result, out);
    }
    Py_DECREF(result);
    return code;
}

/* The interpreter's version, e.g. "3.13.15". */
void cc_python_version(cc_buf *out) {
    const char *v = Py_GetVersion();
    const char *end = strchr(v, ' ');
    *out = buf_copy(v, end ? (size_t)(end - v) : strlen(v));
}
