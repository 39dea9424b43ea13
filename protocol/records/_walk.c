/* The record walk of validation.py compiled: a hundred times faster than the
 * Python loop, which costs about as much CPU per record as the rest of a
 * produce. Built when a C compiler is there (an optional extension);
 * validation.py falls back to its Python walk otherwise, and asks that walk
 * for the error of a batch this one refuses, so both must accept exactly the
 * same records (tests/protocol/records/test_batch_validation.py checks it).
 *
 * walk(buffer) -> (count, min_timestamp_delta, max_timestamp_delta) of the
 * records that make up the buffer exactly, their offset deltas 0, 1, 2...;
 * -1 if it holds anything else.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

enum { VARINT_OK, VARINT_BAD, VARINT_HUGE };

/* The raw (zigzag encoded) varint at *pos, before limit, of at most 10 bytes.
 * VARINT_HUGE: it is well formed but does not fit 64 bits, as Python's walk
 * reads it; no length, count or offset delta can be that large, and a
 * timestamp delta keeps its low 64 bits (*value), as Java reads it. */
static int read_varint(const uint8_t *data, Py_ssize_t limit, Py_ssize_t *pos, uint64_t *value)
{
    uint64_t result = 0;
    for (int shift = 0; shift < 70 && *pos < limit; shift += 7) {
        uint8_t byte = data[(*pos)++];
        result |= (uint64_t)(byte & 0x7F) << shift;
        if (shift == 63 && (byte & 0x7F) > 1) { /* bits past 64, or an 11th byte */
            *value = result;
            return byte < 0x80 ? VARINT_HUGE : VARINT_BAD;
        }
        if (byte < 0x80) {
            *value = result;
            return VARINT_OK;
        }
    }
    return VARINT_BAD;
}

/* Skips nullable length-prefixed bytes (zigzag -1 is null); 0 if they fit before end. */
static int skip_bytes(const uint8_t *data, Py_ssize_t end, Py_ssize_t *pos, int nullable)
{
    uint64_t length;
    if (read_varint(data, end, pos, &length) != VARINT_OK)
        return -1;
    if (length & 1)
        return nullable && length == 1 ? 0 : -1;
    if ((length >> 1) > (uint64_t)(end - *pos))
        return -1;
    *pos += (Py_ssize_t)(length >> 1);
    return 0;
}

/* Checks one record; its timestamp delta (any value) goes to *stamp. */
static int skip_record(const uint8_t *data, Py_ssize_t end, Py_ssize_t pos, uint64_t index, int64_t *stamp)
{
    uint64_t value;
    pos += 1; /* attributes, unused */
    if (read_varint(data, end, &pos, &value) == VARINT_BAD)
        return -1;
    *stamp = (int64_t)(value >> 1) ^ -(int64_t)(value & 1);
    if (read_varint(data, end, &pos, &value) != VARINT_OK || value != index << 1)
        return -1;
    if (skip_bytes(data, end, &pos, 1) || skip_bytes(data, end, &pos, 1)) /* key, value */
        return -1;
    uint64_t headers;
    if (read_varint(data, end, &pos, &headers) != VARINT_OK || headers & 1)
        return -1;
    for (headers >>= 1; headers > 0; headers--)
        if (skip_bytes(data, end, &pos, 0) || skip_bytes(data, end, &pos, 1))
            return -1;
    return pos == end ? 0 : -1;
}

static long long walk(const uint8_t *data, Py_ssize_t size, int64_t *low, int64_t *high)
{
    Py_ssize_t pos = 0;
    long long index = 0;
    int64_t stamp;
    while (pos < size) {
        uint64_t length;
        if (read_varint(data, size, &pos, &length) != VARINT_OK || length & 1
            || (length >> 1) > (uint64_t)(size - pos))
            return -1;
        Py_ssize_t end = pos + (Py_ssize_t)(length >> 1);
        if (skip_record(data, end, pos, (uint64_t)index, &stamp))
            return -1;
        if (stamp < *low)
            *low = stamp;
        if (stamp > *high)
            *high = stamp;
        pos = end;
        index++;
    }
    return index;
}

static PyObject *py_walk(PyObject *module, PyObject *buffer)
{
    Py_buffer view;
    if (PyObject_GetBuffer(buffer, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    long long found;
    int64_t low = INT64_MAX, high = INT64_MIN; /* the range of no timestamps at all */
    Py_BEGIN_ALLOW_THREADS
    found = walk(view.buf, view.len, &low, &high);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (found < 0)
        return PyLong_FromLong(-1);
    return Py_BuildValue("(LLL)", found, (long long)low, (long long)high);
}

static PyMethodDef methods[] = {
    {"walk", py_walk, METH_O, "(count, min, max timestamp delta) of the records that make up the buffer, or -1."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_walk", NULL, -1, methods};

PyMODINIT_FUNC PyInit__walk(void)
{
    return PyModule_Create(&module);
}
