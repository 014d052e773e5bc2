/* Every documented error path of the C ABI (docs/cosim-c.md, "Errors"), called from C.
 *
 *   errors INIT.arrow DAMAGED.arrow BATCH.arrow OUTDIR
 *
 * INIT is examples/saxpy.init.arrow (tiles 1..3, 4x16 FP32, on every PE), BATCH a state file of
 * several machines, OUTDIR a writable folder.  One line per check, "ok NAME" or "FAIL NAME: ...";
 * a failing call must change nothing (the saved state is compared byte for byte) and the process
 * must keep running.  Exit 0 when every check passes.  Buffers are malloc'd at their exact sizes,
 * so an AddressSanitizer build sees any write past them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tile_emu.h"

static int failures = 0;
static const char *out_dir;

static void check(const char *name, int got, int want, const char *needle) {
    const char *msg = te_last_message();
    if (got != want) {
        printf("FAIL %s: %s (%d), expected %s: %s\n", name, te_code_name(got), got, te_code_name(want), msg);
        failures++;
    } else if (needle && !strstr(msg, needle)) {
        printf("FAIL %s: the message does not name \"%s\": %s\n", name, needle, msg);
        failures++;
    } else {
        printf("ok %s\n", name);
    }
}

static void expect(const char *name, int cond, const char *what) {
    if (cond) printf("ok %s\n", name);
    else { printf("FAIL %s: %s\n", name, what); failures++; }
}

static char *slurp(const char *path, long *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(*n ? *n : 1);
    if (fread(b, 1, *n, f) != (size_t)*n) { free(b); b = NULL; }
    fclose(f);
    return b;
}

/* The model's state, saved, is byte-identical to the one saved under `tag` before (first call: saves it). */
static void same_state(te_model *m, const char *tag, const char *name) {
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/%s.before.arrow", out_dir, tag);
    snprintf(b, sizeof b, "%s/%s.after.arrow", out_dir, tag);
    FILE *probe = fopen(a, "rb");
    if (!probe) { te_save(m, a); return; }
    fclose(probe);
    if (te_save(m, b) != TE_OK) { printf("FAIL %s: te_save: %s\n", name, te_last_message()); failures++; return; }
    long na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    expect(name, x && y && na == nb && memcmp(x, y, na) == 0, "the state changed");
    free(x);
    free(y);
}

static const uint64_t SAXPY[6] = {0x000000011c000501ULL, 0x0000000000010f02ULL, 0x0000000000020f02ULL,
                                  0x0000000000030f02ULL, 0x0000000000030f02ULL, 0x0000000400100303ULL};
static const uint64_t MISSING[6] = {0x000000011c000501ULL, 0x0000000000090f02ULL, 0x0000000000020f02ULL,
                                    0x0000000000030f02ULL, 0x0000000000030f02ULL, 0x0000000400100303ULL};
static const uint64_t GARBAGE[2] = {0x000000011c000101ULL, 0x00000000000000ffULL};

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: errors INIT DAMAGED BATCH OUTDIR\n"); return 2; }
    const char *init = argv[1], *damaged = argv[2], *batchfile = argv[3];
    out_dir = argv[4];
    te_model *m = NULL, *e = NULL, *b = NULL;
    uint32_t n = 0;
    uint64_t nb = 0;

    /* opening */
    check("open from nothing", te_open(NULL, NULL, &e), TE_OK, NULL);
    expect("a success leaves no message", strcmp(te_last_message(), "") == 0, te_last_message());
    check("open: null model pointer", te_open(init, NULL, NULL), TE_ERR_NULL, "model");
    check("open: missing file", te_open("/nonexistent/state.arrow", NULL, &m), TE_ERR_STATE_FILE, "/nonexistent/state.arrow");
    check("open: damaged file", te_open(damaged, NULL, &m), TE_ERR_STATE_FILE, damaged);
    check("open: unknown profile", te_open(NULL, "no-such-profile", &m), TE_ERR_PROFILE, "no-such-profile");
    check("open: a file of many machines", te_open(batchfile, NULL, &m), TE_ERR_STATE_FILE, "te_open_batch");
    check("open_batch: unknown backend", te_open_batch(batchfile, NULL, "warp", &b), TE_ERR_ARG, "warp");
    check("new: a store too large", te_new(NULL, 1ULL << 40, 0, &m), TE_ERR_ARG, "local_bytes");
    check("open", te_open(init, "ieee", &m), TE_OK, NULL);
    same_state(m, "m", "baseline saved");

    /* stepping */
    check("step: null model", te_step(NULL, SAXPY, 6, 16, &n, &nb), TE_ERR_NULL, "model");
    check("step: null words", te_step(m, NULL, 6, 16, &n, &nb), TE_ERR_NULL, "words");
    check("records before any step", te_records(m, NULL, 0, NULL, 0, &n, &nb), TE_ERR_ORDER, "no block");
    check("step: words that do not decode", te_step(m, GARBAGE, 2, 16, &n, &nb), TE_ERR_DECODE, "word 1");
    expect("a decode fault has one record", n == 1 && nb == 0, "count");
    te_record *one = malloc(sizeof *one);
    check("records of a decode fault", te_records(m, one, 1, NULL, 0, &n, &nb), TE_OK, NULL);
    expect("its reason is DECODE_ERROR", one->record == TE_FAULT_RECORD && strcmp(one->reason, "DECODE_ERROR") == 0, one->reason);
    same_state(m, "m", "a decode fault changes nothing");
    check("step: no words", te_step(m, SAXPY, 0, 16, &n, &nb), TE_ERR_DECODE, "no words");
    check("step: two blocks' words", te_step(m, (const uint64_t[]){SAXPY[0], SAXPY[1], SAXPY[2], SAXPY[3], SAXPY[4], SAXPY[5], SAXPY[0]}, 7, 16, &n, &nb), TE_ERR_DECODE, "word 6");
    check("step: a block the model rejects", te_step(m, MISSING, 6, 16, &n, &nb), TE_FAULT, "SOURCE_MISSING");
    check("records of a fault", te_records(m, one, 1, NULL, 0, &n, &nb), TE_OK, NULL);
    expect("its fault record", one->record == TE_FAULT_RECORD && strcmp(one->reason, "SOURCE_MISSING") == 0
           && strcmp(one->field, "B.IOT[0]") == 0 && one->block == 0, one->field);
    same_state(m, "m", "a fault changes nothing");
    check("step", te_step(m, SAXPY, 6, 16, &n, &nb), TE_OK, NULL);
    expect("four records, 4 x (256 + 8) bytes", n == 4 && nb == 4 * (256 + 8), "sizes");
    te_record *recs = malloc(4 * sizeof *recs);
    uint8_t *data = malloc(nb);
    uint32_t count = 0;
    uint64_t used = 0;
    check("records: too few records", te_records(m, recs, 3, data, nb, &count, &used), TE_ERR_BUFFER, "4 record");
    expect("the size needed", count == 4 && used == nb, "count");
    check("records: too few bytes", te_records(m, recs, 4, data, nb - 1, &count, &used), TE_ERR_BUFFER, "1056");
    check("records: null buffers", te_records(m, NULL, 4, data, nb, &count, &used), TE_ERR_NULL, "null");
    check("records", te_records(m, recs, 4, data, nb, &count, &used), TE_OK, NULL);
    expect("records in PE order", recs[0].pe == 0 && recs[3].pe == 3 && recs[2].tile == 3 && recs[1].block == 0
           && strcmp(recs[1].mnemonic, "TFMA") == 0 && recs[1].desc.row == 4 && recs[1].desc.col == 16
           && recs[1].desc.datatype == 1 && recs[3].defined_offset + 8 == nb, "fields");
    int64_t v;
    check("record_field: unknown field", te_record_field(m, 0, 99, &v), TE_ERR_ARG, "field 99");
    check("record_field: record out of range", te_record_field(m, 4, TE_F_PE, &v), TE_ERR_ARG, "4 record");
    check("record_field: null value", te_record_field(m, 0, TE_F_PE, NULL), TE_ERR_NULL, "value");

    /* comparing */
    check("dut_element before dut_commit", te_dut_element(m, 0, 0, 1), TE_ERR_ORDER, "te_dut_commit");
    check("dut_commit: PE out of range", te_dut_commit(m, 0, 7, 3), TE_ERR_ARG, "PE 7");
    check("dut_commit", te_dut_commit(m, 0, 0, 3), TE_OK, NULL);
    check("dut_element: wider than FP32", te_dut_element(m, 0, 1ULL << 32, 1), TE_ERR_ARG, "32-bit");
    check("dut_element: out of range", te_dut_element(m, 64, 0, 1), TE_ERR_ARG, "element 64");
    for (uint32_t k = 0; k < 4; k++) {
        if (k) te_dut_commit(m, 0, k, 3);
        const float *vals = (const float *)(data + recs[k].payload_offset);
        for (uint32_t i = 0; i < 64; i++) {
            uint32_t bits;
            memcpy(&bits, vals + i, 4);
            te_dut_element(m, i, (k == 2 && i == 17) ? bits ^ 1u : bits, 1);
        }
        te_dut_status(m, recs[k].status);
    }
    check("check: a wrong element", te_check(m), TE_MISMATCH, "block 0 PE2 tile 3 element 17 [1,1] FP32: expected 0x");
    te_difference d;
    check("last_difference", te_last_difference(m, &d), TE_OK, NULL);
    expect("the difference's fields", d.block == 0 && d.pe == 2 && d.tile == 3 && d.element == 17 && d.row == 1
           && d.col == 1 && (d.expected ^ d.actual) == 1 && strcmp(d.field, "payload") == 0, d.field);
    check("check: nothing given", te_check(m), TE_MISMATCH, "expected a commit, got none");
    check("compare: its own records", te_compare(m, recs, 4, data, nb, &d), TE_OK, NULL);
    data[recs[3].payload_offset + 9] ^= 0x80;
    check("compare: a flipped bit", te_compare(m, recs, 4, data, nb, &d), TE_MISMATCH, "PE3 tile 3 element 2 ");
    data[recs[3].payload_offset + 9] ^= 0x80;
    check("compare: data shorter than a record", te_compare(m, recs, 4, data, nb - 8, &d), TE_ERR_BUFFER, "actual[3]");
    recs[0].desc.datatype = 99;
    check("compare: an unknown DataType", te_compare(m, recs, 4, data, nb, &d), TE_ERR_ARG, "actual[0]");
    recs[0].desc.datatype = 1;
    same_state(m, "m2", "comparisons change nothing: saved");
    check("dut_fault", te_dut_fault(m, 0, "SOURCE_MISSING", "B.IOT[0]"), TE_OK, NULL);
    check("check: a fault against a commit", te_check(m), TE_MISMATCH, "record: expected commit on PE0 tile 3");
    same_state(m, "m2", "comparisons change nothing");

    /* state */
    te_desc desc;
    uint8_t *small = malloc(8);
    check("read_tile: a tile it lacks", te_read_tile(m, 0, 42, &desc, NULL, 0, NULL, 0), TE_ERR_ARG, "no tile 42");
    check("read_tile: PE out of range", te_read_tile(m, 4, 1, &desc, NULL, 0, NULL, 0), TE_ERR_ARG, "PE 4");
    check("read_tile: a small buffer", te_read_tile(m, 0, 1, &desc, small, 8, NULL, 0), TE_ERR_BUFFER, "256 payload");
    expect("the size needed", desc.payload_bytes == 256 && desc.defined_bytes == 8, "sizes");
    uint32_t *ids = malloc(2 * sizeof *ids);
    check("tile_ids: a small buffer", te_tile_ids(m, 0, ids, 2, &count), TE_ERR_BUFFER, "3 tiles");
    expect("the count needed", count == 3, "count");
    check("set_gpr: r0", te_set_gpr(m, 0, 0, 5), TE_ERR_ARG, "r0");
    check("set_gpr: index out of range", te_set_gpr(m, 0, 32, 5), TE_ERR_ARG, "32");
    uint64_t g;
    check("get_gpr: PE out of range", te_get_gpr(m, 9, 1, &g), TE_ERR_ARG, "PE 9");
    te_desc bad = desc;
    bad.datatype = 99;
    uint8_t *pay = malloc(256);
    memset(pay, 0, 256);
    check("write_tile: unknown DataType", te_write_tile(m, 0, 7, &bad, pay, 256, NULL, 0), TE_ERR_ARG, "99");
    check("write_tile: payload of the wrong size", te_write_tile(m, 0, 7, &desc, pay, 255, NULL, 0), TE_ERR_ARG, "255");
    bad = desc;
    bad.row = 5;
    check("write_tile: Row not capacity's", te_write_tile(m, 0, 7, &bad, pay, 320, NULL, 0), TE_ERR_ARG, "Row 5");
    bad = desc;
    bad.capacity = 1ULL << 20;
    bad.row = (uint32_t)((bad.capacity * 8) / (16 * 32));
    check("write_tile: larger than the store", te_write_tile(m, 0, 7, &bad, pay, bad.row * 64, NULL, 0), TE_ERR_ARG, NULL);
    bad = desc;
    bad.has_fmap = 1;
    check("write_tile: a feature map", te_write_tile(m, 0, 7, &bad, pay, 256, NULL, 0), TE_ERR_ARG, "feature-map");
    check("write_tile: null descriptor", te_write_tile(m, 0, 7, NULL, pay, 256, NULL, 0), TE_ERR_NULL, "desc");
    same_state(m, "m3", "state errors change nothing: saved");
    check("save: a folder that does not exist", te_save(m, "/nonexistent/dir/s.arrow"), TE_ERR_IO, "/nonexistent/dir/s.arrow");
    check("save: null path", te_save(m, NULL), TE_ERR_NULL, "path");
    same_state(m, "m3", "state errors change nothing");

    /* handles */
    check("step: a handle it never returned", te_step((te_model *)(uintptr_t)0x7fff0000, SAXPY, 6, 16, &n, &nb), TE_ERR_ARG, "not a handle");
    check("close", te_close(m), TE_OK, NULL);
    check("step on a closed model", te_step(m, SAXPY, 6, 16, &n, &nb), TE_ERR_CLOSED, "closed");
    check("records on a closed model", te_records(m, recs, 4, data, nb, &count, &used), TE_ERR_CLOSED, "closed");
    check("read_tile on a closed model", te_read_tile(m, 0, 1, &desc, NULL, 0, NULL, 0), TE_ERR_CLOSED, "closed");
    check("save on a closed model", te_save(m, "/tmp/x.arrow"), TE_ERR_CLOSED, "closed");
    check("close a closed model", te_close(m), TE_ERR_CLOSED, "closed");
    check("the other model still works", te_step(e, SAXPY, 6, 16, &n, &nb), TE_FAULT, "SOURCE_MISSING");
    check("close the other", te_close(e), TE_OK, NULL);

    /* names */
    expect("code names", strcmp(te_code_name(TE_ERR_BUFFER), "TE_ERR_BUFFER") == 0 && strcmp(te_code_name(TE_OK), "TE_OK") == 0
           && strcmp(te_code_name(12345), "TE_UNKNOWN_CODE") == 0, te_code_name(TE_ERR_BUFFER));
    expect("version", strncmp(te_version(), "tile-emu ", 9) == 0, te_version());

    free(one); free(recs); free(data); free(small); free(ids); free(pay);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
