/* Several independent models in one process, and batch lockstep, from C.
 *
 *   lockstep INIT.arrow PROG.tbs OUTDIR
 *
 * Model A runs the whole stream, model B only its first block, model C is built from nothing
 * with te_new and A's initial tiles and GPRs copied over with te_read_tile/te_write_tile and then
 * runs the stream too (when no tile carries a TIMG2COL feature map, which te_write_tile does not
 * write: else c.arrow is not written); a batch of two copies of the initial model (te_batch) steps the stream in
 * one call per block.  Writes OUTDIR/a.arrow, b.arrow, c.arrow, batch.arrow and records.txt (one
 * line per record of every step of A and of the batch); the test compares them with tile-emu run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tile_emu.h"

#define TRY(call) do { int rc_ = (call); if (rc_ != TE_OK && rc_ != TE_FAULT) { \
    fprintf(stderr, "%s: %s: %s\n", #call, te_code_name(rc_), te_last_message()); return 1; } } while (0)

static FILE *log_file;

static int dump(const char *who, te_model *m) {
    uint32_t count;
    uint64_t bytes;
    int rc = te_records(m, NULL, 0, NULL, 0, &count, &bytes);       /* asks the sizes */
    if (rc != TE_ERR_BUFFER && rc != TE_OK) return rc;
    te_record *r = malloc((count ? count : 1) * sizeof *r);
    uint8_t *data = malloc(bytes ? bytes : 1);
    rc = te_records(m, r, count, data, bytes, &count, &bytes);
    for (uint32_t i = 0; rc == TE_OK && i < count; i++) {
        unsigned sum = 0;
        if (r[i].record == TE_COMMIT)
            for (uint64_t k = 0; k < r[i].desc.payload_bytes; k++) sum = sum * 31 + data[r[i].payload_offset + k];
        fprintf(log_file, "%s machine %u block %llu offset %lld %s %s pe %u tile %u status %u payload %08x\n", who,
                r[i].machine, (unsigned long long)r[i].block, (long long)r[i].offset,
                r[i].record == TE_COMMIT ? "commit" : "fault", r[i].record == TE_COMMIT ? r[i].mnemonic : r[i].reason,
                r[i].pe, r[i].tile, r[i].status, sum);
    }
    free(r);
    free(data);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: lockstep INIT PROG.tbs OUTDIR\n"); return 2; }
    static uint64_t w[1 << 16];
    uint8_t head[16];
    FILE *f = fopen(argv[2], "rb");
    if (!f) return 2;
    size_t n = fread(head, 1, 16, f) == 16 ? fread(w, 8, 1 << 16, f) : 0;
    fclose(f);
    char path[4096];
    snprintf(path, sizeof path, "%s/records.txt", argv[3]);
    log_file = fopen(path, "w");

    te_model *a, *b, *c, *x, *y, *batch;
    int with_c = 1;
    TRY(te_open(argv[1], NULL, &a));
    TRY(te_open(argv[1], NULL, &b));
    TRY(te_new("ieee", 0, 0, &c));
    for (uint32_t pe = 0; pe < 4; pe++) {                  /* C gets A's initial state through the ABI */
        uint32_t ids[256], count;
        TRY(te_tile_ids(a, pe, ids, 256, &count));
        for (uint32_t i = 0; i < count; i++) {
            te_desc d;
            TRY(te_read_tile(a, pe, ids[i], &d, NULL, 0, NULL, 0));
            if (d.has_fmap) { with_c = 0; continue; }
            uint8_t *p = malloc(d.payload_bytes), *q = malloc(d.defined_bytes);
            TRY(te_read_tile(a, pe, ids[i], &d, p, d.payload_bytes, q, d.defined_bytes));
            TRY(te_write_tile(c, pe, ids[i], &d, p, d.payload_bytes, q, d.defined_bytes));
            free(p);
            free(q);
        }
        for (uint32_t g = 1; g < 32; g++) {
            uint64_t v;
            TRY(te_get_gpr(a, pe, g, &v));
            TRY(te_set_gpr(c, pe, g, v));
        }
    }
    TRY(te_open(argv[1], NULL, &x));
    TRY(te_open(argv[1], NULL, &y));
    te_model *pair[2] = {x, y};
    TRY(te_batch(pair, 2, "cpu", &batch));
    TRY(te_close(x));                                      /* the batch holds copies */
    TRY(te_close(y));

    int first = 1, stop_a = 0, stop_c = 0;
    for (size_t at = 0; at < n;) {
        size_t len = 1 + ((w[at] >> 8) & 0xff);
        if (len > n - at) len = n - at;
        int64_t off = (int64_t)(16 + 8 * at);
        if (!stop_a) {
            int rc = te_step(a, w + at, (uint32_t)len, off, NULL, NULL);
            TRY(rc);
            TRY(dump("a", a));
            stop_a = rc != TE_OK;
        }
        if (first) TRY(te_step(b, w + at, (uint32_t)len, off, NULL, NULL));
        if (!stop_c) {
            int rc = te_step(c, w + at, (uint32_t)len, off, NULL, NULL);
            TRY(rc);
            stop_c = rc != TE_OK;
        }
        TRY(te_step(batch, w + at, (uint32_t)len, off, NULL, NULL));
        TRY(dump("batch", batch));
        first = 0;
        at += len;
    }
    uint32_t machines;
    TRY(te_machines(batch, &machines));
    fprintf(log_file, "batch machines %u\n", machines);
    snprintf(path, sizeof path, "%s/a.arrow", argv[3]);
    TRY(te_save(a, path));
    snprintf(path, sizeof path, "%s/b.arrow", argv[3]);
    TRY(te_save(b, path));
    snprintf(path, sizeof path, "%s/c.arrow", argv[3]);
    if (with_c) TRY(te_save(c, path));
    snprintf(path, sizeof path, "%s/batch.arrow", argv[3]);
    TRY(te_save(batch, path));
    TRY(te_close(a));
    TRY(te_close(b));
    TRY(te_close(c));
    TRY(te_close(batch));
    fclose(log_file);
    return 0;
}
