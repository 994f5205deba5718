/* Native loops of the screen model's fast paths (issue 12).
 *
 * Layer rule: CPython's C API only; no I/O, no state. Each function computes exactly what the
 * pure-Python form named in its docstring computes (signaltty/term/screen/native.py chooses
 * between them; tests/term/test_native.py compares the two on generated input).
 *
 * Characters are read through PyUnicode_READ, so every storage kind (1, 2 or 4 bytes per code
 * point) takes the same path; positions are code-point indices, as in Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define ESC 0x1b
#define BEL 0x07

/* SGR parameters end after at most this many bytes of [0-?] (the regexes' {0,256}+). */
#define SGR_PARAMS_MAX 256

static inline int
is_param(Py_UCS4 c)
{
    return c >= 0x30 && c <= 0x3f;
}

/* Drawn by the simple-run regex: [ -~] or [^\x00-\x1f\x7f-\x9f]. */
static inline int
is_plain(Py_UCS4 c)
{
    return (c >= 0x20 && c <= 0x7e) || c >= 0xa0;
}

/* End of the run of plain characters at i: one loop per storage kind, so that the common
 * case (ASCII text, 1 byte a character) is a tight byte loop without PyUnicode_READ's switch. */
static inline Py_ssize_t
plain_end(int kind, const void *data, Py_ssize_t i, Py_ssize_t n)
{
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *p = (const Py_UCS1 *)data;
        while (i < n && is_plain(p[i]))
            i++;
    }
    else if (kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *p = (const Py_UCS2 *)data;
        while (i < n && is_plain(p[i]))
            i++;
    }
    else {
        const Py_UCS4 *p = (const Py_UCS4 *)data;
        while (i < n && is_plain(p[i]))
            i++;
    }
    return i;
}

/* OSC payload characters: [^\x00-\x1f\x7f]. */
static inline int
is_payload(Py_UCS4 c)
{
    return c >= 0x20 && c != 0x7f;
}

/* End of the SGR sequence "ESC [ params m" at i (text[i] == ESC), or -1. */
static inline Py_ssize_t
sgr_end(int kind, const void *data, Py_ssize_t n, Py_ssize_t i)
{
    Py_ssize_t j = i + 2, limit;
    if (j > n || PyUnicode_READ(kind, data, i + 1) != '[')
        return -1;
    limit = j + SGR_PARAMS_MAX < n ? j + SGR_PARAMS_MAX : n;
    while (j < limit && is_param(PyUnicode_READ(kind, data, j)))
        j++;
    if (j < n && PyUnicode_READ(kind, data, j) == 'm')
        return j + 1;
    return -1;
}

/* End of the OSC "ESC ] payload (BEL | ESC \)" at i (text[i] == ESC), or -1. */
static inline Py_ssize_t
osc_end(int kind, const void *data, Py_ssize_t n, Py_ssize_t i, Py_ssize_t payload_max)
{
    Py_ssize_t j = i + 2, limit;
    Py_UCS4 c;
    if (j > n || PyUnicode_READ(kind, data, i + 1) != ']')
        return -1;
    limit = payload_max < n - j ? j + payload_max : n;
    while (j < limit && is_payload(PyUnicode_READ(kind, data, j)))
        j++;
    if (j >= n)
        return -1;
    c = PyUnicode_READ(kind, data, j);
    if (c == BEL)
        return j + 1;
    if (c == ESC && j + 1 < n && PyUnicode_READ(kind, data, j + 1) == '\\')
        return j + 2;
    return -1;
}

static Py_ssize_t
clamp(Py_ssize_t value, Py_ssize_t n)
{
    return value < 0 ? 0 : (value > n ? n : value);
}

/* The leading ``text, pos`` of a call with `want` arguments: 0, or -1 with an exception set.
 * ``pos`` comes back clamped to 0..len(text). */
static int
text_and_pos(const char *name, PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want,
             PyObject **text, Py_ssize_t *pos)
{
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments", name, want);
        return -1;
    }
    if (!PyUnicode_Check(args[0])) {
        PyErr_Format(PyExc_TypeError, "%s: text must be str", name);
        return -1;
    }
    *text = args[0];
    *pos = PyLong_AsSsize_t(args[1]);
    if (*pos == -1 && PyErr_Occurred())
        return -1;
    *pos = clamp(*pos, PyUnicode_GET_LENGTH(args[0]));
    return 0;
}

PyDoc_STRVAR(simple_end_doc,
"simple_end(text, pos, osc_max) -> int\n\n"
"Index of the first element at or after ``pos`` that is not simple: the end of\n"
"``history._SIMPLE_RUN.match(text, pos)`` (width-agnostic text, SGR sequences with at most\n"
"256 parameter bytes, CR LF, OSC sequences with at most ``osc_max`` payload characters).\n"
"``pos`` is clamped to ``0..len(text)`` as ``re`` does.");

static PyObject *
simple_end(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *text;
    Py_ssize_t n, i, osc_max, end;
    int kind;
    const void *data;

    if (text_and_pos("simple_end", args, nargs, 3, &text, &i) < 0)
        return NULL;
    osc_max = PyLong_AsSsize_t(args[2]);
    if (osc_max == -1 && PyErr_Occurred())
        return NULL;
    if (osc_max < 0) {
        PyErr_SetString(PyExc_ValueError, "simple_end: osc_max must be >= 0");
        return NULL;
    }
    n = PyUnicode_GET_LENGTH(text);
    kind = PyUnicode_KIND(text);
    data = PyUnicode_DATA(text);
    while (i < n) {
        Py_UCS4 c;
        i = plain_end(kind, data, i, n);
        if (i >= n)
            break;
        c = PyUnicode_READ(kind, data, i);
        if (c == '\r') {
            if (i + 1 < n && PyUnicode_READ(kind, data, i + 1) == '\n') {
                i += 2;
                continue;
            }
            break;
        }
        if (c != ESC)
            break;
        end = sgr_end(kind, data, n, i);
        if (end < 0)
            end = osc_end(kind, data, n, i, osc_max);
        if (end < 0)
            break;
        i = end;
    }
    return PyLong_FromSsize_t(i);
}

PyDoc_STRVAR(strip_doc,
"strip(text, start, stop) -> str\n\n"
"``text[start:stop]`` without its SGR and OSC sequences: an ESC followed by ``]`` loses\n"
"everything up to and including the next BEL or ``ESC \\``; any other ESC loses everything\n"
"up to and including the next ``m``; an ESC without its terminator is kept. On a simple run\n"
"(``history``) or a paint (``repaint``), where every ESC starts an SGR or OSC sequence,\n"
"this is ``history._strip`` and ``repaint``'s ``_STRIP_SGR.sub('', run)``. ``start`` and\n"
"``stop`` are clamped to ``0..len(text)``.");

static PyObject *
strip(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *text, *result;
    Py_ssize_t n, start, stop, i, j, out, mark;
    int kind;
    const char *data;
    char *buffer;

    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "strip(text, start, stop) takes 3 arguments");
        return NULL;
    }
    text = args[0];
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "strip: text must be str");
        return NULL;
    }
    start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred())
        return NULL;
    stop = PyLong_AsSsize_t(args[2]);
    if (stop == -1 && PyErr_Occurred())
        return NULL;
    n = PyUnicode_GET_LENGTH(text);
    start = clamp(start, n);
    stop = clamp(stop, n);
    if (stop <= start)
        return PyUnicode_New(0, 0);
    kind = PyUnicode_KIND(text);
    data = (const char *)PyUnicode_DATA(text);
    if (PyUnicode_FindChar(text, ESC, start, stop, 1) == -1)
        return PyUnicode_Substring(text, start, stop);
    buffer = PyMem_Malloc((size_t)(stop - start) * (size_t)kind);
    if (buffer == NULL)
        return PyErr_NoMemory();
    out = 0;
    mark = start;  /* start of the text not yet copied */
    i = start;
    while (i < stop) {
        if (PyUnicode_READ(kind, data, i) != ESC) {
            i++;
            continue;
        }
        j = -1;
        if (i + 1 < stop && PyUnicode_READ(kind, data, i + 1) == ']') {
            Py_ssize_t k;
            for (k = i + 2; k < stop; k++) {
                Py_UCS4 c = PyUnicode_READ(kind, data, k);
                if (c == BEL) {
                    j = k + 1;
                    break;
                }
                if (c == ESC && k + 1 < stop && PyUnicode_READ(kind, data, k + 1) == '\\') {
                    j = k + 2;
                    break;
                }
            }
        }
        else {
            Py_ssize_t k;
            for (k = i + 1; k < stop; k++) {
                if (PyUnicode_READ(kind, data, k) == 'm') {
                    j = k + 1;
                    break;
                }
            }
        }
        if (j < 0) {  /* unterminated: the ESC is text */
            i++;
            continue;
        }
        memcpy(buffer + out * kind, data + mark * kind, (size_t)(i - mark) * (size_t)kind);
        out += i - mark;
        mark = i = j;
    }
    memcpy(buffer + out * kind, data + mark * kind, (size_t)(stop - mark) * (size_t)kind);
    out += stop - mark;
    /* FromKindAndData narrows to the smallest kind that holds the result (canonical str). */
    result = PyUnicode_FromKindAndData(kind, buffer, out);
    PyMem_Free(buffer);
    return result;
}

/* --- fastforward._HARMLESS ------------------------------------------------------------- */

/* The end of a run of [set] bytes from j, at most `most` of them. */
static inline Py_ssize_t
run_of(int kind, const void *data, Py_ssize_t n, Py_ssize_t j, Py_ssize_t most,
       int (*in_set)(Py_UCS4))
{
    Py_ssize_t start = j;
    while (j < n && j - start < most && in_set(PyUnicode_READ(kind, data, j)))
        j++;
    return j;
}

static int
is_digit_semi(Py_UCS4 c)
{
    return (c >= '0' && c <= '9') || c == ';';
}

static int
is_param_fn(Py_UCS4 c)
{
    return is_param(c);
}

static int
is_inter(Py_UCS4 c)
{
    return c >= 0x20 && c <= 0x2f;
}

static inline int
is_final(Py_UCS4 c)
{
    return c >= 0x40 && c <= 0x7e;
}

/* The end of the CSI at i (text[i] == ESC, text[i + 1] == '[') that _HARMLESS skips, or -1. */
static Py_ssize_t
harmless_csi(int kind, const void *data, Py_ssize_t n, Py_ssize_t i)
{
    Py_ssize_t a = i + 2, j, k;
    Py_UCS4 c;
    /* SGR */
    j = run_of(kind, data, n, a, 256, is_param_fn);
    if (j < n && PyUnicode_READ(kind, data, j) == 'm')
        return j + 1;
    /* digits and ';' with a final that changes only the grid, or ED 0/1 */
    j = run_of(kind, data, n, a, 256, is_digit_semi);
    if (j < n) {
        c = PyUnicode_READ(kind, data, j);
        if (is_final(c) && c != 'J' && c != 'g' && c != 'h' && c != 'l' && c != 'r' && c != 's'
            && c != 'u')
            return j + 1;
        if (c == 'J') {
            /* (?!0*+[23](?:;|J)) at the parameters' start */
            k = a;
            while (k < n && PyUnicode_READ(kind, data, k) == '0')
                k++;
            if (!(k + 1 < n
                  && (PyUnicode_READ(kind, data, k) == '2' || PyUnicode_READ(kind, data, k) == '3')
                  && (PyUnicode_READ(kind, data, k + 1) == ';'
                      || PyUnicode_READ(kind, data, k + 1) == 'J')))
                return j + 1;
        }
    }
    /* DEC private but DECSET, DECRST, DECSED */
    if (a < n && PyUnicode_READ(kind, data, a) == '?') {
        j = run_of(kind, data, n, a + 1, 256, is_digit_semi);
        if (j < n) {
            c = PyUnicode_READ(kind, data, j);
            if (is_final(c) && c != 'J' && c != 'h' && c != 'l')
                return j + 1;
        }
    }
    /* other private markers */
    if (a < n) {
        c = PyUnicode_READ(kind, data, a);
        if (c == '<' || c == '=' || c == '>') {
            j = run_of(kind, data, n, a + 1, 255, is_param_fn);
            if (j < n && is_final(PyUnicode_READ(kind, data, j)))
                return j + 1;
        }
    }
    /* intermediates, but DECSTR */
    j = run_of(kind, data, n, a, 256, is_param_fn);
    if (j + 1 < n && PyUnicode_READ(kind, data, j) == '!' && PyUnicode_READ(kind, data, j + 1) == 'p')
        return -1;
    k = run_of(kind, data, n, j, 16, is_inter);
    if (k > j && k < n && is_final(PyUnicode_READ(kind, data, k)))
        return k + 1;
    return -1;
}

PyDoc_STRVAR(harmless_end_doc,
"harmless_end(text, pos) -> int\n\n"
"The end of ``fastforward._HARMLESS.match(text, pos)``: the run of text, controls but SO, SI\n"
"and ESC, SGR, grid-only CSI sequences, ED 0/1, ignored private and intermediate sequences,\n"
"ESC finals but 7 8 H c and strings that a full-screen program's skipped output may hold.\n"
"``pos`` is clamped to ``0..len(text)``.");

static PyObject *
harmless_end(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *text;
    Py_ssize_t n, i, end;
    int kind;
    const void *data;

    if (text_and_pos("harmless_end", args, nargs, 2, &text, &i) < 0)
        return NULL;
    n = PyUnicode_GET_LENGTH(text);
    kind = PyUnicode_KIND(text);
    data = PyUnicode_DATA(text);
    while (i < n) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i), d;
        if (is_plain(c) || (c <= 0x9f && c != 0x0e && c != 0x0f && c != ESC)) {
            i++;  /* text, or one control pyte handles on the grid or ignores */
            continue;
        }
        if (c != ESC || i + 1 >= n)
            break;
        d = PyUnicode_READ(kind, data, i + 1);
        if (d == '[') {
            end = harmless_csi(kind, data, n, i);
            if (end < 0)
                break;
            i = end;
        }
        else if (d == 'P' || d == 'X' || d == '^' || d == '_') {
            Py_ssize_t k = i + 2;
            Py_UCS4 e = 0;
            while (k < n) {
                e = PyUnicode_READ(kind, data, k);
                if (e == 0x18 || e == 0x1a || e == ESC)
                    break;
                k++;
            }
            if (k + 1 < n && e == ESC && PyUnicode_READ(kind, data, k + 1) == '\\')
                i = k + 2;
            else
                break;
        }
        else if (d >= 0x30 && d <= 0x7e && d != '7' && d != '8' && d != 'H' && d != 'P'
                 && d != 'X' && d != '[' && d != ']' && d != '^' && d != '_' && d != 'c')
            i += 2;
        else
            break;
    }
    return PyLong_FromSsize_t(i);
}

/* --- repaint.scan's common elements ------------------------------------------------------ */

/* repaint.NARROW_RANGES: characters one cell wide without a width lookup. */
static inline int
is_narrow(Py_UCS4 c)
{
    if (c < 0x2010)
        return (c >= 0x20 && c <= 0x7e) || (c >= 0xa0 && c <= 0xff);
    return (c <= 0x2027) || (c >= 0x2030 && c <= 0x205e) || (c >= 0x2190 && c <= 0x21ff)
        || (c >= 0x23f4 && c <= 0x23ff) || (c >= 0x2500 && c <= 0x25fc)
        || (c >= 0x2722 && c <= 0x2727) || (c >= 0x2729 && c <= 0x274b)
        || (c >= 0x2758 && c <= 0x2794) || (c >= 0x2800 && c <= 0x28ff);
}

/* The largest screen side these loops accept (the daemon's own limits are 500 x 200). */
#define SIDE_MAX 10000

/* Codes shared with repaint.py (checked by tests/term/test_native.py). */
#define WRITE 1
#define FREE_OP 0
#define EVENT_OP 12


/* A paint at i: runs of plain characters (narrow ones only if `narrow_only`) and SGR
 * sequences, as many as there are. Returns its end (== i if empty); *width gets the
 * characters drawn, *last_at the index of the last one (-1 if none) and *odd 1 if one of them
 * is not narrow (never with `narrow_only`, which stops there). One loop per storage kind, as
 * in plain_end. */
#define PAINT_LOOP(T)                                                                         \
    do {                                                                                      \
        const T *s_ = (const T *)data;                                                        \
        while (i < n) {                                                                       \
            Py_UCS4 c = s_[i];                                                                \
            if (c == ESC) {                                                                   \
                end = sgr_end(kind, data, n, i);                                              \
                if (end < 0)                                                                  \
                    break;                                                                    \
                i = end;                                                                      \
                continue;                                                                     \
            }                                                                                 \
            if (!is_plain(c))                                                                 \
                break;                                                                        \
            if (!is_narrow(c)) {                                                              \
                if (narrow_only)                                                              \
                    break;                                                                    \
                wide = 1;                                                                     \
            }                                                                                 \
            at = i;                                                                           \
            w++;                                                                              \
            i++;                                                                              \
        }                                                                                     \
    } while (0)

static Py_ssize_t
paint_end(int kind, const void *data, Py_ssize_t n, Py_ssize_t i, int narrow_only,
          Py_ssize_t *width, Py_ssize_t *last_at, int *odd)
{
    Py_ssize_t w = 0, at = -1, end;
    int wide = 0;
    if (kind == PyUnicode_1BYTE_KIND)
        PAINT_LOOP(Py_UCS1);
    else if (kind == PyUnicode_2BYTE_KIND)
        PAINT_LOOP(Py_UCS2);
    else
        PAINT_LOOP(Py_UCS4);
    *width = w;
    *last_at = at;
    *odd = wide;
    return i;
}
#undef PAINT_LOOP

static int
append_new(PyObject *list, PyObject *item)
{
    int rc;
    if (item == NULL)
        return -1;
    rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

static PyObject *
ints4(Py_ssize_t a, Py_ssize_t b, Py_ssize_t c, Py_ssize_t d)
{
    PyObject *t = PyTuple_New(4);
    Py_ssize_t v[4] = {a, b, c, d};
    int k;
    if (t == NULL)
        return NULL;
    for (k = 0; k < 4; k++) {
        PyObject *o = PyLong_FromSsize_t(v[k]);
        if (o == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, o);
    }
    return t;
}

/* (start, end, WRITE, x, y, last) */
static PyObject *
write_tuple(Py_ssize_t start, Py_ssize_t end, Py_ssize_t x, Py_ssize_t y, PyObject *last)
{
    PyObject *t = PyTuple_New(6);
    Py_ssize_t v[5] = {start, end, WRITE, x, y};
    int k;
    if (t == NULL)
        return NULL;
    for (k = 0; k < 5; k++) {
        PyObject *o = PyLong_FromSsize_t(v[k]);
        if (o == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, o);
    }
    Py_INCREF(last);
    PyTuple_SET_ITEM(t, 5, last);
    return t;
}

/* Record one write of cells [first, stop) on row y: its span, then the write itself. */
static int
record(PyObject *writes, PyObject *spans, Py_ssize_t start, Py_ssize_t end, Py_ssize_t x,
       Py_ssize_t y, PyObject *last, Py_ssize_t first, Py_ssize_t stop)
{
    if (append_new(spans, ints4(PyList_GET_SIZE(writes), y, first, stop)) < 0)
        return -1;
    return append_new(writes, write_tuple(start, end, x, y, last));
}

static Py_ssize_t
clamp_to(Py_ssize_t value, Py_ssize_t hi)
{
    return value < 0 ? 0 : (value > hi ? hi : value);
}

/* The number written by up to 4 ASCII digits at [a, b); "" reads as 1 (CUP's default). */
static Py_ssize_t
cup_number(int kind, const void *data, Py_ssize_t a, Py_ssize_t b)
{
    Py_ssize_t v = 0;
    if (a == b)
        return 1;
    for (; a < b; a++)
        v = v * 10 + (Py_ssize_t)(PyUnicode_READ(kind, data, a) - '0');
    return v;
}

static inline Py_ssize_t
digits(int kind, const void *data, Py_ssize_t n, Py_ssize_t i, Py_ssize_t most)
{
    Py_ssize_t j = i;
    while (j < n && j - i < most) {
        Py_UCS4 c = PyUnicode_READ(kind, data, j);
        if (c < '0' || c > '9')
            break;
        j++;
    }
    return j;
}

/* Alternative 5 at *p: a paint (text and SGR sequences) of narrow characters that fits on
 * the row. 1: recorded, *p, *x and *last moved on; 0: left to the Python loop (a character
 * to look up, or a wrap); -1: an exception is set. */
static int
take_paint(PyObject *text, int kind, const void *data, Py_ssize_t n, Py_ssize_t *p,
           Py_ssize_t columns, Py_ssize_t *x, Py_ssize_t y, PyObject **last, PyObject *writes,
           PyObject *spans)
{
    Py_ssize_t width, last_at, e;
    int odd;
    e = paint_end(kind, data, n, *p, 0, &width, &last_at, &odd);
    if (odd || *x + width > columns)
        return 0;
    if (width > 0) {
        if (record(writes, spans, *p, e, *x, y, *last, *x, *x + width) < 0)
            return -1;
        *x += width;
        Py_SETREF(*last, PyUnicode_Substring(text, last_at, last_at + 1));
        if (*last == NULL)
            return -1;
    }
    *p = e;
    return 1;
}

PyDoc_STRVAR(scan_rows_doc,
"scan_rows(text, pos, columns, lines, x, y, last, writes, spans, events, ops, spans_max)\n"
"    -> (pos, x, y, last)\n\n"
"``repaint.scan``'s loop over its most common elements, from ``pos`` on: a row repaint\n"
"(``CUP`` [narrow paint] [``EL 0``]) that fits on its row, a paint of narrow characters that\n"
"fits, and a CSI whose memoized operation (``ops``, repaint's ``_OPS``) is free or a plain\n"
"event. Appends to ``writes``, ``spans`` and ``events`` exactly what the Python loop would and\n"
"returns at the first element it does not take (or when ``spans`` holds more than\n"
"``spans_max``), with the cursor column, row and REP's character there; the Python loop goes\n"
"on from that position.");

static PyObject *
scan_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *text, *last, *writes, *spans, *events, *ops, *result = NULL;
    Py_ssize_t n, p, columns, lines, x, y, spans_max;
    int kind;
    const void *data;

    if (nargs != 12) {
        PyErr_SetString(PyExc_TypeError, "scan_rows takes 12 arguments");
        return NULL;
    }
    text = args[0];
    last = args[6];
    writes = args[7];
    spans = args[8];
    events = args[9];
    ops = args[10];
    if (!PyUnicode_Check(text) || !PyUnicode_Check(last) || !PyList_CheckExact(writes)
        || !PyList_CheckExact(spans) || !PyList_CheckExact(events) || !PyDict_CheckExact(ops)) {
        PyErr_SetString(PyExc_TypeError, "scan_rows: bad argument types");
        return NULL;
    }
    {
        Py_ssize_t *const into[] = {&p, &columns, &lines, &x, &y, &spans_max};
        const int from[] = {1, 2, 3, 4, 5, 11};
        for (int k = 0; k < 6; k++) {
            *into[k] = PyLong_AsSsize_t(args[from[k]]);
            if (*into[k] == -1 && PyErr_Occurred())
                return NULL;
        }
    }
    if (columns < 2 || lines < 2 || columns > SIDE_MAX || lines > SIDE_MAX) {
        PyErr_SetString(PyExc_ValueError, "scan_rows: the screen must be 2 x 2 to 10000 x 10000");
        return NULL;
    }
    /* x == columns is a pending wrap */
    if (x < 0 || x > columns || y < 0 || y >= lines) {
        PyErr_SetString(PyExc_ValueError, "scan_rows: the cursor is outside the screen");
        return NULL;
    }
    n = PyUnicode_GET_LENGTH(text);
    kind = PyUnicode_KIND(text);
    data = PyUnicode_DATA(text);
    Py_INCREF(last);
    if (p < 0)
        p = 0;
    while (p < n && PyList_GET_SIZE(spans) <= spans_max) {
        Py_UCS4 c = PyUnicode_READ(kind, data, p);
        Py_ssize_t i, a1, b1, a2 = -1, b2 = -1, s3, e3, width, last_at, e;
        int taken, odd;
        if (c == ESC ? p + 1 >= n || PyUnicode_READ(kind, data, p + 1) != '[' : !is_plain(c))
            break;  /* a control, or an ESC that starts no CSI */
        /* Alternative 1: CSI row [; column] H|f, then a narrow paint, then EL 0. */
        a1 = p + 2;
        b1 = c == ESC ? digits(kind, data, n, a1, 4) : n;
        i = b1;
        if (i < n && PyUnicode_READ(kind, data, i) == ';') {
            a2 = i + 1;
            b2 = digits(kind, data, n, a2, 4);
            i = b2;
        }
        if (i < n && (PyUnicode_READ(kind, data, i) == 'H' || PyUnicode_READ(kind, data, i) == 'f')) {
            Py_ssize_t e4 = -1, s4;
            y = clamp_to(cup_number(kind, data, a1, b1) - 1, lines - 1);
            x = clamp_to((a2 < 0 ? 1 : cup_number(kind, data, a2, b2)) - 1, columns - 1);
            s3 = i + 1;
            e3 = paint_end(kind, data, n, s3, 1, &width, &last_at, &odd);
            s4 = e3;
            if (s4 + 2 < n && PyUnicode_READ(kind, data, s4) == ESC
                && PyUnicode_READ(kind, data, s4 + 1) == '[') {
                Py_UCS4 k2 = PyUnicode_READ(kind, data, s4 + 2);
                if (k2 == 'K')
                    e4 = s4 + 3;
                else if (k2 == '0' && s4 + 3 < n && PyUnicode_READ(kind, data, s4 + 3) == 'K')
                    e4 = s4 + 4;
            }
            e = e4 >= 0 ? e4 : e3;
            if (width > 0) {
                if (x + width > columns) {
                    /* The paint is the next element (a wrap): the Python loop takes it. */
                    p = s3;
                    break;
                }
                if (e4 < 0) {
                    if (record(writes, spans, s3, e, x, y, last, x, x + width) < 0)
                        goto error;
                    x += width;
                }
                else {
                    if (record(writes, spans, s3, e, x, y, last, x, columns) < 0)
                        goto error;
                    x = x + width < columns - 1 ? x + width : columns - 1;
                    e4 = -1;
                }
                Py_SETREF(last, PyUnicode_Substring(text, last_at, last_at + 1));
                if (last == NULL)
                    goto error;
            }
            if (e4 >= 0) {
                if (x >= columns)
                    x = columns - 1;
                if (record(writes, spans, s4, e, x, y, last, x, x ? columns : columns + 1) < 0)
                    goto error;
            }
            p = e;
            continue;
        }
        /* Alternative 5: a paint, starting with text or with an SGR sequence. */
        if (c != ESC || sgr_end(kind, data, n, p) >= 0) {
            taken = take_paint(text, kind, data, n, &p, columns, &x, y, &last, writes, spans);
            if (taken < 0)
                goto error;
            if (!taken)
                break;
            continue;
        }
        /* Any other CSI (alternatives 6-8) whose operation is memoized as free or an event. */
        {
            Py_ssize_t pe = p + 2, ie, fe;
            PyObject *key, *op, *code, *arg;
            long code_v, arg_v;
            while (pe < n && pe - (p + 2) < 256 && is_param(PyUnicode_READ(kind, data, pe)))
                pe++;
            ie = pe;
            while (ie < n && ie - pe < 16) {
                Py_UCS4 k2 = PyUnicode_READ(kind, data, ie);
                if (k2 < 0x20 || k2 > 0x2f)
                    break;
                ie++;
            }
            if (ie >= n)
                break;
            c = PyUnicode_READ(kind, data, ie);
            if (c < 0x40 || c > 0x7e)
                break;
            fe = ie + 1;
            key = PyUnicode_Substring(text, p, fe);
            if (key == NULL)
                goto error;
            op = PyDict_GetItemWithError(ops, key);  /* borrowed */
            Py_DECREF(key);
            if (op == NULL) {
                if (PyErr_Occurred())
                    goto error;
                break;  /* not seen yet: the Python loop works it out and memoizes it */
            }
            if (!PyTuple_CheckExact(op) || PyTuple_GET_SIZE(op) != 4)
                break;
            Py_INCREF(op);
            code = PyTuple_GET_ITEM(op, 0);
            arg = PyTuple_GET_ITEM(op, 1);
            if (!PyLong_CheckExact(code) || !PyLong_CheckExact(arg)) {
                Py_DECREF(op);
                break;
            }
            code_v = PyLong_AsLong(code);
            arg_v = PyLong_AsLong(arg);
            Py_DECREF(op);
            if (PyErr_Occurred()) {
                PyErr_Clear();
                break;  /* not one of ours: the Python loop decides */
            }
            if (code_v == EVENT_OP && arg_v == 0) {
                PyObject *event = Py_BuildValue(
                    "(n(sNNN))", p, "csi", PyUnicode_Substring(text, p + 2, pe),
                    PyUnicode_Substring(text, pe, ie), PyUnicode_Substring(text, ie, fe));
                if (append_new(events, event) < 0)
                    goto error;
            }
            else if (code_v != FREE_OP)
                break;
            p = fe;
        }
    }
    result = Py_BuildValue("(nnnO)", p, x, y, last);
error:
    Py_XDECREF(last);  /* NULL when a substring could not be made */
    return result;
}

/* --- repaint.plan ---------------------------------------------------------------------- */

#define PINNED 2

PyDoc_STRVAR(plan_live_doc,
"plan_live(writes, spans, lines, columns, plain, stubby) -> bytearray\n\n"
"``repaint.plan``'s marking: for each write of a segment, 1 (live) or 0 (dead). ``spans`` are\n"
"``(write, row, first, stop)`` with ``0 <= row < lines`` and ``0 <= first``, ``stop <=\n"
"columns + 1``; walking them from the last, a span is live when a cell of ``[first, stop)``\n"
"is not yet covered on its row or its row is marked in ``stubby`` (bytes, one per row); a\n"
"span past the edge (``stop > columns``) on a row marked in ``plain`` counts only up to\n"
"``columns``. A write of kind PINNED (2) is always live. Raises ValueError on a span outside\n"
"those bounds.");

static PyObject *
plan_live(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *writes, *spans, *live = NULL, *pinned = NULL;
    Py_ssize_t lines, columns, width, nw, ns, k;
    Py_buffer plain = {0}, stubby = {0};
    unsigned char *cover = NULL, *out;

    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "plan_live takes 6 arguments");
        return NULL;
    }
    writes = args[0];
    spans = args[1];
    if (!PyList_CheckExact(writes) || !PyList_CheckExact(spans)) {
        PyErr_SetString(PyExc_TypeError, "plan_live: writes and spans must be lists");
        return NULL;
    }
    if ((lines = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred())
        return NULL;
    if ((columns = PyLong_AsSsize_t(args[3])) == -1 && PyErr_Occurred())
        return NULL;
    if (lines < 1 || columns < 1 || lines > SIDE_MAX || columns > SIDE_MAX) {
        PyErr_SetString(PyExc_ValueError, "plan_live: bad screen size");
        return NULL;
    }
    if (PyObject_GetBuffer(args[4], &plain, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[5], &stubby, PyBUF_SIMPLE) < 0)
        goto done;
    if (plain.len < lines || stubby.len < lines) {
        PyErr_SetString(PyExc_ValueError, "plan_live: plain and stubby need a byte per row");
        goto done;
    }
    nw = PyList_GET_SIZE(writes);
    ns = PyList_GET_SIZE(spans);
    live = PyByteArray_FromStringAndSize(NULL, nw);
    if (live == NULL)
        goto done;
    out = (unsigned char *)PyByteArray_AS_STRING(live);
    memset(out, 0, (size_t)nw);
    width = columns + 1;  /* a row's cells and its default (the span past the edge) */
    cover = PyMem_Calloc((size_t)lines, (size_t)width);
    if (cover == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (k = ns - 1; k >= 0; k--) {
        PyObject *span = PyList_GET_ITEM(spans, k);
        Py_ssize_t index, y, first, stop, c;
        unsigned char *row;
        int uncovered = 0;
        if (!PyTuple_Check(span) || PyTuple_GET_SIZE(span) != 4
            || !PyLong_CheckExact(PyTuple_GET_ITEM(span, 0))
            || !PyLong_CheckExact(PyTuple_GET_ITEM(span, 1))
            || !PyLong_CheckExact(PyTuple_GET_ITEM(span, 2))
            || !PyLong_CheckExact(PyTuple_GET_ITEM(span, 3))) {
            /* exact ints: reading them runs no Python code that could change the list */
            PyErr_SetString(PyExc_TypeError, "plan_live: a span is a 4-tuple of ints");
            goto fail;
        }
        if ((index = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 0))) == -1 && PyErr_Occurred())
            goto fail;
        if ((y = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 1))) == -1 && PyErr_Occurred())
            goto fail;
        if ((first = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 2))) == -1 && PyErr_Occurred())
            goto fail;
        if ((stop = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 3))) == -1 && PyErr_Occurred())
            goto fail;
        if (index < 0 || index >= nw || y < 0 || y >= lines || first < 0 || stop > width) {
            PyErr_SetString(PyExc_ValueError, "plan_live: a span outside the screen");
            goto fail;
        }
        if (stop > columns && ((const unsigned char *)plain.buf)[y])
            stop = columns;
        if (stop <= first)
            continue;
        row = cover + y * width;
        for (c = first; c < stop; c++) {
            if (!row[c]) {
                uncovered = 1;
                row[c] = 1;
            }
        }
        if (uncovered || ((const unsigned char *)stubby.buf)[y])
            out[index] = 1;
    }
    pinned = PyLong_FromLong(PINNED);
    if (pinned == NULL)
        goto fail;
    for (k = 0; k < nw && k < PyList_GET_SIZE(writes); k++) {
        PyObject *w = PyList_GET_ITEM(writes, k), *kind;
        int is_pinned;
        if (!PyTuple_Check(w) || PyTuple_GET_SIZE(w) < 3) {
            PyErr_SetString(PyExc_TypeError, "plan_live: a write is a tuple");
            goto fail;
        }
        kind = PyTuple_GET_ITEM(w, 2);
        Py_INCREF(w);  /* the comparison may run Python code */
        is_pinned = PyObject_RichCompareBool(kind, pinned, Py_EQ);  /* write[2] == PINNED */
        Py_DECREF(w);
        if (is_pinned < 0)
            goto fail;
        if (is_pinned)
            out[k] = 1;
    }
    goto done;
fail:
    Py_CLEAR(live);
done:
    Py_XDECREF(pinned);
    PyMem_Free(cover);
    if (plain.obj != NULL)
        PyBuffer_Release(&plain);
    if (stubby.obj != NULL)
        PyBuffer_Release(&stubby);
    return live;
}


/* ---------------------------------------------------------------- osc.py, repaint.py */

/* Byte classes of osc.py's _QUIET_TABLE / _QUIET_DELETE: a pair "A then B" (with the deleted
 * bytes between them ignored) or a BEL anywhere means the read is not quiet. */
enum { Q_TEXT = 0, Q_A = 1, Q_B = 2, Q_SKIP = 3, Q_BEL = 4 };

static unsigned char quiet_class[256];
static PyObject *empty_str; /* "" (immortal enough: the module keeps it for the process) */

static void
quiet_class_init(void)
{
    int b;
    const char *a = "\x1b" "0[56", *z = "]PX^_cn";
    for (b = 0; b < 0x20; b++)
        quiet_class[b] = Q_SKIP;
    quiet_class[0x7f] = Q_SKIP;
    for (; *a; a++)
        quiet_class[(unsigned char)*a] = Q_A;
    for (; *z; z++)
        quiet_class[(unsigned char)*z] = Q_B;
    quiet_class[0x07] = Q_BEL;
}

PyDoc_STRVAR(loud_doc,
"loud(chunk: bytes) -> bool\n\n"
"True if chunk holds a BEL, or one of ESC 0 [ 5 6 followed by one of ] P X ^ _ c n with\n"
"only C0 controls (not ESC) and DEL between them: the pure-Python form is osc.py's\n"
"``b'\\x07' in chunk or b'\\x01\\x02' in chunk.translate(_QUIET_TABLE, _QUIET_DELETE)``.");

static PyObject *
loud(PyObject *self, PyObject *arg)
{
    const unsigned char *p, *end;
    int after_a = 0;
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "loud() takes bytes");
        return NULL;
    }
    p = (const unsigned char *)PyBytes_AS_STRING(arg);
    end = p + PyBytes_GET_SIZE(arg);
    for (; p < end; p++) {
        switch (quiet_class[*p]) {
        case Q_TEXT:
            after_a = 0;
            break;
        case Q_A:
            after_a = 1;
            break;
        case Q_B:
            if (after_a)
                Py_RETURN_TRUE;
            break;
        case Q_BEL:
            Py_RETURN_TRUE;
        default: /* Q_SKIP: deleted by the translation, the pair reads across it */
            break;
        }
    }
    Py_RETURN_FALSE;
}

PyDoc_STRVAR(has_stub_doc,
"has_stub(row: dict) -> bool\n\n"
"True if a cell of row (a dict of column -> Char) has empty data (a wide character's right\n"
"half): repaint.py's ``'' in map(itemgetter(0), row.values())``.");

static PyObject *
has_stub(PyObject *self, PyObject *arg)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    if (!PyDict_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "has_stub() takes a dict");
        return NULL;
    }
    while (PyDict_Next(arg, &pos, &key, &value)) {
        PyObject *data;
        int empty;
        if (PyTuple_Check(value) && PyTuple_GET_SIZE(value) > 0) {
            data = PyTuple_GET_ITEM(value, 0);
            if (PyUnicode_CheckExact(data)) {
                if (PyUnicode_GET_LENGTH(data) == 0)
                    Py_RETURN_TRUE;
                continue;
            }
            Py_INCREF(data);
        } else {
            data = PySequence_GetItem(value, 0);
            if (data == NULL)
                return NULL;
        }
        empty = PyObject_RichCompareBool(data, empty_str, Py_EQ);
        Py_DECREF(data);
        if (empty < 0)
            return NULL;
        if (empty)
            Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

static PyMethodDef methods[] = {
    {"simple_end", (PyCFunction)(void (*)(void))simple_end, METH_FASTCALL, simple_end_doc},
    {"strip", (PyCFunction)(void (*)(void))strip, METH_FASTCALL, strip_doc},
    {"harmless_end", (PyCFunction)(void (*)(void))harmless_end, METH_FASTCALL, harmless_end_doc},
    {"scan_rows", (PyCFunction)(void (*)(void))scan_rows, METH_FASTCALL, scan_rows_doc},
    {"plan_live", (PyCFunction)(void (*)(void))plan_live, METH_FASTCALL, plan_live_doc},
    {"loud", (PyCFunction)loud, METH_O, loud_doc},
    {"has_stub", (PyCFunction)has_stub, METH_O, has_stub_doc},
    {NULL, NULL, 0, NULL},
};

static int
exec_module(PyObject *module)
{
    quiet_class_init();
    if (empty_str == NULL) {
        empty_str = PyUnicode_New(0, 0);
        if (empty_str == NULL)
            return -1;
    }
    return 0;
}

static struct PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "signaltty.term.screen._native",
    "Native loops of the screen model's fast paths (see native.py).",
    0,
    methods,
    slots,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    return PyModuleDef_Init(&module_def);
}
