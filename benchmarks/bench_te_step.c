/* One te_step through the C ABI against Machine.step from Python, same process, same run
 * (benchmarks/bench_cabi.py builds and runs this; docs/performance.md, "C ABI").
 *
 *   bench_te_step INIT.arrow WORDS.hex STEPS ROUNDS
 *
 * WORDS.hex holds the block's words, one 16-digit hex word a line.  STEPS x ROUNDS times, in turn:
 * one te_step (timed in C), one te_step + te_records, and one Machine.step(block) in the embedded
 * interpreter (timed there with time.perf_counter), on the very machine the model holds and the
 * very Block object te_step's decoded-word cache gives it, so the difference is the boundary
 * alone.  Calls alternate one by one and the medians of the single calls are reported: on a
 * shared host, loops timed one after the other differ by more than the boundary costs.
 */
#include <Python.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "tile_emu.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: bench_te_step INIT WORDS.hex STEPS ROUNDS\n"); return 2; }
    uint64_t w[256];
    uint32_t nw = 0;
    FILE *f = fopen(argv[2], "r");
    if (!f) return 2;
    while (nw < 256 && fscanf(f, "%lx", (unsigned long *)&w[nw]) == 1) nw++;
    fclose(f);
    int steps = atoi(argv[3]), rounds = atoi(argv[4]);
    te_model *m;
    if (te_open(argv[1], NULL, &m) != TE_OK) { fprintf(stderr, "%s\n", te_last_message()); return 1; }
    uint32_t n;
    uint64_t nb;
    if (te_step(m, w, nw, 16, &n, &nb) != TE_OK) { fprintf(stderr, "%s\n", te_last_message()); return 1; }
    te_record *recs = malloc(n * sizeof *recs);
    uint8_t *data = malloc(nb);
    uint32_t count;
    uint64_t used;

    /* the baseline, in this process's interpreter (started by te_open) */
    PyGILState_STATE g = PyGILState_Ensure();
    char code[8192];
    snprintf(code, sizeof code,
             "import time\n"
             "import numpy as np\n"
             "from emulator.dpi import capi\n"
             "_m, = [x.machine for x in capi._models.values()]\n"
             "_words = [int(x, 16) for x in open('%s').read().split()]\n"
             "_block = capi.decoded(np.array(_words, '<u8').tobytes())\n"
             "def _one():\n"
             "    t = time.perf_counter()\n"
             "    _m.step(_block, offset=16)\n"
             "    return time.perf_counter() - t\n"
             "for _ in range(200):\n"
             "    _one()\n", argv[2]);
    if (PyRun_SimpleString(code) != 0) return 1;
    PyObject *one = PyObject_GetAttrString(PyImport_AddModule("__main__"), "_one");
    PyGILState_Release(g);

    for (int i = 0; i < 200; i++) te_step(m, w, nw, 16, &n, &nb);      /* warm up */
    int total = steps * rounds;
    double *c = malloc(total * sizeof *c), *cr = malloc(total * sizeof *cr), *py = malloc(total * sizeof *py);
    for (int i = 0; i < total; i++) {
        double t = now();
        te_step(m, w, nw, 16, &n, &nb);
        c[i] = now() - t;
        t = now();
        te_step(m, w, nw, 16, &n, &nb);
        te_records(m, recs, n, data, nb, &count, &used);
        cr[i] = now() - t;
        g = PyGILState_Ensure();
        PyObject *s = PyObject_CallNoArgs(one);
        py[i] = PyFloat_AsDouble(s);
        Py_DECREF(s);
        PyGILState_Release(g);
    }
    double mc = median(c, total), mcr = median(cr, total), mpy = median(py, total);
    printf("{\"te_step_us\": %.3f, \"te_step_records_us\": %.3f, \"machine_step_us\": %.3f, "
           "\"ratio\": %.4f, \"ratio_with_records\": %.4f, \"calls\": %d, \"records\": %u, "
           "\"data_bytes\": %llu}\n", 1e6 * mc, 1e6 * mcr, 1e6 * mpy, mc / mpy, mcr / mpy, total, n,
           (unsigned long long)nb);
    te_close(m);
    return 0;
}
