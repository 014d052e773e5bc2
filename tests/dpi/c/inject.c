/* A Python exception inside tile-emu comes back as TE_ERR_PYTHON and a message, never as an abort:
 *
 *   inject INIT.arrow OUTDIR      (run with a sitecustomize.py that makes Machine.step raise)
 *
 * The failing step changes nothing (the state saved before and after is the same file), and the
 * host goes on calling the library.  Prints the message; exit 0 when all of that holds.
 */
#include <stdio.h>
#include <string.h>
#include "tile_emu.h"

static const uint64_t SAXPY[6] = {0x000000011c000501ULL, 0x0000000000010f02ULL, 0x0000000000020f02ULL,
                                  0x0000000000030f02ULL, 0x0000000000030f02ULL, 0x0000000400100303ULL};

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    char before[4096], after[4096];
    snprintf(before, sizeof before, "%s/before.arrow", argv[2]);
    snprintf(after, sizeof after, "%s/after.arrow", argv[2]);
    te_model *m;
    if (te_open(argv[1], NULL, &m) != TE_OK) { printf("open: %s\n", te_last_message()); return 1; }
    if (te_save(m, before) != TE_OK) return 1;
    uint32_t n = 7;
    int rc = te_step(m, SAXPY, 6, 16, &n, NULL);
    printf("step: %s: %s\n", te_code_name(rc), te_last_message());
    if (rc != TE_ERR_PYTHON) return 1;
    int rc2 = te_step(m, SAXPY, 6, 16, &n, NULL);           /* still answering, with the same message */
    printf("again: %s: %s\n", te_code_name(rc2), te_last_message());
    if (te_save(m, after) != TE_OK || te_close(m) != TE_OK) { printf("afterwards: %s\n", te_last_message()); return 1; }
    printf("host still running\n");
    return rc2 == TE_ERR_PYTHON ? 0 : 1;
}
