/* replay INIT.arrow PROG.tbs OUT.arrow: run a stream through libtile_emu, block by block, and save
   the final state -- the file `tile-emu run PROG.tbs --init INIT.arrow --out OUT.arrow` writes. */
#include <stdio.h>
#include <stdlib.h>
#include "tile_emu.h"

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: replay INIT.arrow PROG.tbs OUT.arrow\n"); return 2; }
    FILE *f = fopen(argv[2], "rb");
    if (!f) { perror(argv[2]); return 2; }
    static uint64_t w[1 << 20];                      /* the words after the 16-byte header */
    uint8_t head[16];
    size_t n = fread(head, 1, 16, f) == 16 ? fread(w, 8, 1 << 20, f) : 0;   /* a little-endian host */
    fclose(f);
    te_model *m;
    if (te_open(argv[1], NULL, &m) != TE_OK) { fprintf(stderr, "%s\n", te_last_message()); return 1; }
    int rc = TE_OK;
    for (size_t at = 0; at < n && rc == TE_OK;) {
        size_t len = 1 + ((w[at] >> 8) & 0xff);     /* BSTART and the N descriptor words it declares */
        if (len > n - at) len = n - at;
        rc = te_step(m, w + at, (uint32_t)len, (int64_t)(16 + 8 * at), NULL, NULL);
        if (rc != TE_OK) fprintf(stderr, "%s\n", te_last_message());
        at += len;
    }
    if (te_save(m, argv[3]) != TE_OK) { fprintf(stderr, "%s\n", te_last_message()); rc = TE_ERR_IO; }
    te_close(m);
    return rc == TE_OK ? 0 : 1;
}
