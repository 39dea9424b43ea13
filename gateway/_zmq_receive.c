/* Receiving a batch of whole messages from a ZeroMQ socket in one call, their
 * small frames copied into bytes: pyzmq builds a Frame and runs a Python call per
 * frame (about 1.5 us for a two-frame Dafka RECORD here), this 0.2-0.3 us a
 * message. A store receives every record of every partition so, one by one.
 * Built when a C compiler is there (an optional extension); zmq_trio.py
 * receives through pyzmq otherwise.
 *
 * It calls the libzmq that pyzmq loaded, on the socket pyzmq made (its
 * `underlying` address): bind() finds that library's functions through
 * pyzmq's backend module, so nothing is linked at build time and both share
 * one library. zmq_msg_t is libzmq's stable ABI: 64 bytes, pointer aligned.
 *
 * bind(backend_module_path, error_class) -> None; OSError when the functions
 *     cannot be found (another pyzmq backend).
 * receive(socket_address, limit, copied_below) -> list of messages, each a list
 *     of frames: those queued now, at most `limit`, without waiting;
 *     error_class(errno) on a ZeroMQ error. A frame smaller than copied_below
 *     is bytes; a larger one a ReceivedFrame, which holds ZeroMQ's message
 *     (no copy) and offers its bytes through the buffer protocol and len().
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>

#define DONTWAIT 1 /* ZMQ_DONTWAIT */

typedef struct {
    _Alignas(void *) unsigned char opaque[64];
} zmq_message;

static int (*message_init)(zmq_message *);
static int (*message_receive)(zmq_message *, void *, int);
static int (*message_close)(zmq_message *);
static int (*message_move)(zmq_message *, zmq_message *);
static void *(*message_data)(zmq_message *);
static size_t (*message_size)(const zmq_message *);
static int (*message_more)(const zmq_message *);
static int (*last_errno)(void);
static PyObject *error_class;

static int find(void *library, const char *name, void **function)
{
    *function = dlsym(library, name);
    if (*function == NULL)
        PyErr_Format(PyExc_OSError, "libzmq's %s not found through pyzmq's backend", name);
    return *function == NULL ? -1 : 0;
}

static PyObject *bind(PyObject *module, PyObject *args)
{
    const char *path;
    PyObject *error;
    if (!PyArg_ParseTuple(args, "sO", &path, &error))
        return NULL;
    /* Already loaded by pyzmq: this only takes a handle on it, whose lookups also search
     * the libraries it depends on, libzmq among them. */
    void *library = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (library == NULL) {
        PyErr_Format(PyExc_OSError, "pyzmq's backend is not loaded from %s", path);
        return NULL;
    }
    if (find(library, "zmq_msg_init", (void **)&message_init) || find(library, "zmq_msg_recv", (void **)&message_receive)
        || find(library, "zmq_msg_close", (void **)&message_close)
        || find(library, "zmq_msg_move", (void **)&message_move) || find(library, "zmq_msg_data", (void **)&message_data)
        || find(library, "zmq_msg_size", (void **)&message_size) || find(library, "zmq_msg_more", (void **)&message_more)
        || find(library, "zmq_errno", (void **)&last_errno)) {
        message_receive = NULL;
        return NULL;
    }
    Py_XSETREF(error_class, Py_NewRef(error));
    Py_RETURN_NONE;
}

/* A frame received and not copied: ZeroMQ's message, closed when the object goes. */
typedef struct {
    PyObject_HEAD
    zmq_message message;
} ReceivedFrame;

static void received_frame_dealloc(ReceivedFrame *self)
{
    message_close(&self->message);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t received_frame_length(ReceivedFrame *self)
{
    return (Py_ssize_t)message_size(&self->message);
}

static int received_frame_buffer(ReceivedFrame *self, Py_buffer *view, int flags)
{
    return PyBuffer_FillInfo(view, (PyObject *)self, message_data(&self->message), received_frame_length(self), 1, flags);
}

static PySequenceMethods received_frame_sequence = {.sq_length = (lenfunc)received_frame_length};
static PyBufferProcs received_frame_buffers = {.bf_getbuffer = (getbufferproc)received_frame_buffer};

static PyTypeObject received_frame_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gateway._zmq_receive.ReceivedFrame",
    .tp_doc = "A frame as ZeroMQ received it: its bytes through the buffer protocol, without a copy.",
    .tp_basicsize = sizeof(ReceivedFrame),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)received_frame_dealloc,
    .tp_as_sequence = &received_frame_sequence,
    .tp_as_buffer = &received_frame_buffers,
};

/* `message` as a frame object: copied into bytes when small, else moved into a ReceivedFrame.
 * `message` is closed (or moved) either way. */
static PyObject *frame_of(zmq_message *message, Py_ssize_t copied_below)
{
    Py_ssize_t size = (Py_ssize_t)message_size(message);
    if (size < copied_below) {
        PyObject *frame = PyBytes_FromStringAndSize(message_data(message), size);
        message_close(message);
        return frame;
    }
    ReceivedFrame *frame = PyObject_New(ReceivedFrame, &received_frame_type);
    if (frame == NULL) {
        message_close(message);
        return NULL;
    }
    message_init(&frame->message);
    message_move(&frame->message, message);
    message_close(message);
    return (PyObject *)frame;
}

/* The next frame into *frame (as frame_of makes it) and its `more` flag; 1 when a frame was received, 0
 * when none waits (EAGAIN), -1 with an exception set on an error. */
static int receive_frame(void *socket, Py_ssize_t copied_below, PyObject **frame, int *more)
{
    zmq_message message;
    int received, error = 0;
    message_init(&message);
    do {
        received = message_receive(&message, socket, DONTWAIT);
    } while (received < 0 && (error = last_errno()) == EINTR);
    if (received < 0) {
        message_close(&message);
        if (error == EAGAIN)
            return 0;
        PyObject *exception = PyObject_CallFunction(error_class, "i", error);
        if (exception != NULL) {
            PyErr_SetObject((PyObject *)Py_TYPE(exception), exception);
            Py_DECREF(exception);
        }
        return -1;
    }
    *more = message_more(&message);
    *frame = frame_of(&message, copied_below);
    return *frame == NULL ? -1 : 1;
}

/* One whole message appended to `messages`; as receive_frame answers. ZeroMQ delivers a
 * message's frames together: once the first came, the others are there. */
static int receive_message(void *socket, Py_ssize_t copied_below, PyObject *messages)
{
    PyObject *frame;
    int more, received = receive_frame(socket, copied_below, &frame, &more);
    if (received <= 0)
        return received;
    PyObject *message = PyList_New(1);
    if (message == NULL) {
        Py_DECREF(frame);
        return -1;
    }
    PyList_SET_ITEM(message, 0, frame);
    while (more) {
        frame = NULL;
        if (receive_frame(socket, copied_below, &frame, &more) <= 0 || PyList_Append(message, frame) < 0) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "a message's next frame did not come with it");
            Py_XDECREF(frame);
            Py_DECREF(message);
            return -1;
        }
        Py_DECREF(frame);
    }
    int appended = PyList_Append(messages, message);
    Py_DECREF(message);
    return appended < 0 ? -1 : 1;
}

static PyObject *receive(PyObject *module, PyObject *args)
{
    unsigned long long address;
    Py_ssize_t limit, copied_below;
    if (!PyArg_ParseTuple(args, "Knn", &address, &limit, &copied_below))
        return NULL;
    if (message_receive == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "bind() first");
        return NULL;
    }
    PyObject *messages = PyList_New(0);
    if (messages == NULL)
        return NULL;
    int received = 1;
    while (PyList_GET_SIZE(messages) < limit && (received = receive_message((void *)(uintptr_t)address, copied_below, messages)) > 0)
        ;
    if (received < 0 && PyList_GET_SIZE(messages) == 0)
        Py_CLEAR(messages);
    else if (received < 0) /* those received are returned; the error comes again at the next call */
        PyErr_Clear();
    return messages;
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS, "Find libzmq's functions through pyzmq's backend module."},
    {"receive", receive, METH_VARARGS, "The whole messages queued on a socket now, at most `limit`."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {PyModuleDef_HEAD_INIT, "_zmq_receive", NULL, -1, methods};

PyMODINIT_FUNC PyInit__zmq_receive(void)
{
    if (PyType_Ready(&received_frame_type) < 0)
        return NULL;
    return PyModule_Create(&module_definition);
}
