/* A thread that reads one PTY master into a bounded buffer, without the GIL (issue 12).
 *
 * Why: a flooding program's output reaches the master at most ~4 KiB per read, each handed
 * over by a kernel worker; read on the event loop's thread, those round trips and the screen
 * model's work take turns on one core. Read here, they overlap with the screen's work on
 * another, and the loop takes the output in large pieces. Design: docs/decisions.md,
 * "Session 16" and "Session 17"; the Python side is signaltty/term/reader_thread.py.
 *
 * The thread never touches Python objects. It reads the master (non-blocking) straight into
 * the free part of a ring buffer, at most READ_BYTES at a time, polls the master and a stop
 * pipe only when nothing waits, counts what it read under a mutex and writes one byte to the wake
 * pipe when the buffer goes from empty to not empty. With the buffer full it waits (the
 * program is then slowed by the PTY, as when nobody reads). A read of 0 bytes or an error
 * other than EAGAIN/EINTR ends it; the wake pipe then stays readable until the owner has
 * taken the last byte, so an event loop watching it sees the end.
 *
 * One owner is the design (the daemon's event loop calls every method), but any number of
 * Python threads may call them at once without harm: halt() joins once, close() frees only
 * after the thread is joined, and nothing is read after close() but the closed flag.
 */
#define PY_SSIZE_T_CLEAN
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np, pipe2 */
#endif
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define READ_BYTES (64 * 1024)
#define STACK_BYTES (256 * 1024)
#define THREAD_NAME "signaltty-read"

typedef struct {
    PyObject_HEAD
    int fd;              /* the master; not ours to close */
    int stop_r, stop_w;  /* the owner writes to stop_w to end a poll */
    int wake_r, wake_w;  /* readable while bytes wait (or the thread ended) */
    char *ring;
    size_t cap, head, count;
    int woken;           /* a byte sits in the wake pipe */
    int stopping;        /* the owner asked the thread to end */
    int finished;        /* the thread ended by itself (EOF or an error) */
    int end;             /* 0; -1 for EOF; else the errno that ended it */
    int ready;           /* mu, join_mu and space are initialised */
    int started, joined, closing, closed;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_mutex_t join_mu; /* held by the one halt() that joins */
    pthread_cond_t space;
    PyObject *weakrefs;
} Reader;

/* Called with mu held. */
static void
wake(Reader *r)
{
    if (!r->woken) {
        char b = 1;
        ssize_t n;
        do {
            n = write(r->wake_w, &b, 1);
        } while (n < 0 && errno == EINTR);
        r->woken = 1;
    }
}

/* Called with mu held. */
static void
unwake(Reader *r)
{
    if (r->woken) {
        char sink[16];
        while (read(r->wake_r, sink, sizeof sink) > 0)
            ;
        r->woken = 0;
    }
}

static void
finish(Reader *r, int end)
{
    pthread_mutex_lock(&r->mu);
    r->finished = 1;
    r->end = end;
    wake(r);
    pthread_mutex_unlock(&r->mu);
}

static void *
run(void *arg)
{
    Reader *r = (Reader *)arg;
#if defined(__APPLE__)
    pthread_setname_np(THREAD_NAME); /* macOS names only the calling thread */
#endif
    for (;;) {
        size_t room, tail;
        ssize_t n;
        struct pollfd fds[2];

        pthread_mutex_lock(&r->mu);
        while (!r->stopping && r->count == r->cap)
            pthread_cond_wait(&r->space, &r->mu);
        if (r->stopping) {
            pthread_mutex_unlock(&r->mu);
            return NULL;
        }
        tail = (r->head + r->count) % r->cap;
        room = r->cap - r->count;
        pthread_mutex_unlock(&r->mu);
        if (room > r->cap - tail)
            room = r->cap - tail; /* the free space up to the ring's end, read in place */
        if (room > READ_BYTES)
            room = READ_BYTES;

        /* Only this thread appends and the owner only takes from the head, so the free
         * space [tail, tail + room) stays free until count grows below. The master is
         * non-blocking: read first, and poll only when nothing waits (in a flood the next
         * 4 KiB are usually there, and a poll per read costs a system call each time). */
        n = read(r->fd, r->ring + tail, room);
        if (n > 0) {
            pthread_mutex_lock(&r->mu);
            r->count += (size_t)n;
            wake(r);
            pthread_mutex_unlock(&r->mu);
            continue;
        }
        if (n == 0) {
            finish(r, -1);
            return NULL;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            finish(r, errno);
            return NULL;
        }
        fds[0].fd = r->fd;
        fds[0].events = POLLIN;
        fds[0].revents = 0;
        fds[1].fd = r->stop_r;
        fds[1].events = POLLIN;
        fds[1].revents = 0;
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            finish(r, errno);
            return NULL;
        }
        if (fds[1].revents)
            return NULL;
        if (fds[0].revents & POLLNVAL) {
            finish(r, EBADF);
            return NULL;
        }
    }
}

static int
pipe_pair(int *rd, int *wr)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    *rd = p[0];
    *wr = p[1];
    return 0;
}

static void
close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

/* Stop the thread and wait for it, without the GIL. Several Python threads may call it at
 * once: join_mu lets one of them join and the others wait for that. */
static void
halt(Reader *r)
{
    if (!r->started || r->joined)
        return;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&r->join_mu);
    if (!r->joined) {
        char b = 1;
        ssize_t n;
        pthread_mutex_lock(&r->mu);
        r->stopping = 1;
        pthread_cond_signal(&r->space);
        pthread_mutex_unlock(&r->mu);
        do {
            n = write(r->stop_w, &b, 1);
        } while (n < 0 && errno == EINTR);
        pthread_join(r->thread, NULL);
        r->joined = 1;
    }
    pthread_mutex_unlock(&r->join_mu);
    Py_END_ALLOW_THREADS
}

static void
release(Reader *r)
{
    if (r->closed)
        return;
    if (r->closing) { /* another close() frees; this one returns once the thread is gone */
        halt(r);
        return;
    }
    r->closing = 1;
    halt(r);
    /* The GIL is held from here on: no other Python thread is inside take() or a getter,
     * and they all check closed first. The mutexes live until dealloc, when no method can
     * be running any more (a thread waiting in halt() still uses join_mu). */
    r->closed = 1;
    close_fd(&r->stop_r);
    close_fd(&r->stop_w);
    close_fd(&r->wake_r);
    close_fd(&r->wake_w);
    PyMem_RawFree(r->ring);
    r->ring = NULL;
    r->count = 0;
}

static int
Reader_init(Reader *r, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"fd", "capacity", NULL};
    int fd;
    Py_ssize_t capacity;
    pthread_attr_t attr;
    sigset_t all, old;
    int rc;

    if (r->ring != NULL || r->closed) {
        PyErr_SetString(PyExc_RuntimeError, "Reader is initialised once");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "in", kwlist, &fd, &capacity))
        return -1;
    if (fd < 0) {
        PyErr_SetString(PyExc_ValueError, "fd must be an open descriptor");
        return -1;
    }
    if (capacity < READ_BYTES || capacity > 64 * 1024 * 1024) {
        PyErr_SetString(PyExc_ValueError, "capacity must be 64 KiB to 64 MiB");
        return -1;
    }
    /* The thread reads before it polls, so a blocking read would hold it where a halt cannot
     * reach it: the master is made non-blocking (the event loop reading it needs that too).
     * A descriptor that is not open is left to the thread, which ends with EBADF. */
    {
        int flags = fcntl(fd, F_GETFL);
        if (flags >= 0 && !(flags & O_NONBLOCK) && fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
    }
    r->fd = fd;
    r->cap = (size_t)capacity;
    r->ring = PyMem_RawMalloc(r->cap);
    if (r->ring == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (pipe_pair(&r->stop_r, &r->stop_w) < 0 || pipe_pair(&r->wake_r, &r->wake_w) < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        release(r);
        return -1;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_mutex_init(&r->join_mu, NULL);
    pthread_cond_init(&r->space, NULL);
    r->ready = 1;
    /* The thread blocks every signal: they stay with the interpreter's main thread. */
    sigfillset(&all);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, STACK_BYTES);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&r->thread, &attr, run, r);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
#if defined(__linux__)
    /* named before this returns, for `top -H`, `ps -L` and the tests (/proc/self/task/N/comm) */
    if (rc == 0)
        pthread_setname_np(r->thread, THREAD_NAME);
#endif
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        errno = rc;
        PyErr_SetFromErrno(PyExc_OSError);
        release(r);
        return -1;
    }
    r->started = 1;
    return 0;
}

static PyObject *
Reader_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    Reader *r = (Reader *)type->tp_alloc(type, 0);
    if (r == NULL)
        return NULL;
    r->fd = r->stop_r = r->stop_w = r->wake_r = r->wake_w = -1;
    return (PyObject *)r;
}

static void
Reader_dealloc(Reader *r)
{
    if (r->weakrefs != NULL)
        PyObject_ClearWeakRefs((PyObject *)r);
    release(r);
    if (r->ready) {
        pthread_cond_destroy(&r->space);
        pthread_mutex_destroy(&r->join_mu);
        pthread_mutex_destroy(&r->mu);
        r->ready = 0;
    }
    Py_TYPE(r)->tp_free((PyObject *)r);
}

static PyObject *
Reader_take(Reader *r, PyObject *arg)
{
    Py_ssize_t limit = PyLong_AsSsize_t(arg);
    size_t n, first;
    PyObject *out;
    char *dst;

    if (limit == -1 && PyErr_Occurred())
        return NULL;
    if (limit < 0) {
        PyErr_SetString(PyExc_ValueError, "limit must be >= 0");
        return NULL;
    }
    if (r->closed || !r->started)
        return PyBytes_FromStringAndSize(NULL, 0);
    pthread_mutex_lock(&r->mu);
    n = r->count < (size_t)limit ? r->count : (size_t)limit;
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n);
    if (out == NULL) {
        pthread_mutex_unlock(&r->mu);
        return NULL;
    }
    dst = PyBytes_AS_STRING(out);
    first = r->cap - r->head;
    if (first > n)
        first = n;
    memcpy(dst, r->ring + r->head, first);
    memcpy(dst + first, r->ring, n - first);
    r->head = (r->head + n) % r->cap;
    r->count -= n;
    /* Emptied under the same lock the thread appends under: no wake-up is lost. An ended
     * thread leaves the pipe readable so that the loop comes back to see the end. */
    if (r->count == 0 && !r->finished)
        unwake(r);
    if (n)
        pthread_cond_signal(&r->space);
    pthread_mutex_unlock(&r->mu);
    return out;
}

static PyObject *
Reader_halt(Reader *r, PyObject *Py_UNUSED(ignored))
{
    halt(r);
    Py_RETURN_NONE;
}

static PyObject *
Reader_close(Reader *r, PyObject *Py_UNUSED(ignored))
{
    release(r);
    Py_RETURN_NONE;
}

static PyObject *
Reader_get_pending(Reader *r, void *Py_UNUSED(closure))
{
    size_t n = 0;
    if (!r->closed && r->started) {
        pthread_mutex_lock(&r->mu);
        n = r->count;
        pthread_mutex_unlock(&r->mu);
    }
    return PyLong_FromSize_t(n);
}

static PyObject *
Reader_get_running(Reader *r, void *Py_UNUSED(closure))
{
    int running = 0;
    if (!r->closed && r->started && !r->joined) {
        pthread_mutex_lock(&r->mu);
        running = !r->finished && !r->stopping;
        pthread_mutex_unlock(&r->mu);
    }
    return PyBool_FromLong(running);
}

static PyObject *
Reader_get_end(Reader *r, void *Py_UNUSED(closure))
{
    int end = 0;
    if (!r->closed && r->started) {
        pthread_mutex_lock(&r->mu);
        end = r->end;
        pthread_mutex_unlock(&r->mu);
    }
    return PyLong_FromLong(end);
}

static PyObject *
Reader_get_wake_fd(Reader *r, void *Py_UNUSED(closure))
{
    return PyLong_FromLong(r->wake_r);
}

static PyObject *
Reader_get_closed(Reader *r, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(r->closed);
}

static PyMethodDef Reader_methods[] = {
    {"take", (PyCFunction)Reader_take, METH_O,
     "take(limit) -> bytes: at most limit buffered bytes, oldest first (b'' if none)."},
    {"halt", (PyCFunction)Reader_halt, METH_NOARGS,
     "Stop the thread and wait for it; buffered bytes stay for take(). Idempotent."},
    {"close", (PyCFunction)Reader_close, METH_NOARGS,
     "Halt, drop buffered bytes, close the pipes. Idempotent; the master stays open."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Reader_getset[] = {
    {"pending", (getter)Reader_get_pending, NULL, "Bytes buffered, not yet taken.", NULL},
    {"running", (getter)Reader_get_running, NULL,
     "True until the thread was halted or ended by itself.", NULL},
    {"end", (getter)Reader_get_end, NULL,
     "0 while reading or halted; -1 after EOF; else the errno that ended the thread.", NULL},
    {"wake_fd", (getter)Reader_get_wake_fd, NULL,
     "Readable while bytes are buffered or the thread ended (-1 once closed).", NULL},
    {"closed", (getter)Reader_get_closed, NULL, "True after close().", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "signaltty.term._reader.Reader",
    .tp_doc = "Reader(fd, capacity): a thread reading fd into a ring of capacity bytes.",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Reader_new,
    .tp_init = (initproc)Reader_init,
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_methods = Reader_methods,
    .tp_getset = Reader_getset,
    .tp_weaklistoffset = offsetof(Reader, weakrefs),
};

static int
exec_module(PyObject *module)
{
    if (PyType_Ready(&ReaderType) < 0)
        return -1;
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(module, "Reader", (PyObject *)&ReaderType) < 0) {
        Py_DECREF(&ReaderType);
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
    "signaltty.term._reader",
    "PTY master reader threads (see reader_thread.py).",
    0,
    NULL,
    slots,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__reader(void)
{
    return PyModuleDef_Init(&module_def);
}
