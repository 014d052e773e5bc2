/* tile_emu.h -- the C ABI of tile-emu: the bit-exact golden model as a library (libtile_emu).
 *
 * Build the library from the installed package:   tile-emu cosim build --out DIR
 * (DIR then holds libtile_emu.so, this header and tile_emu_pkg.sv).  Reference: docs/cosim-c.md.
 *
 * Every function returns a status code (enum te_code): TE_OK, a positive answer (TE_MISMATCH,
 * TE_FAULT) or a negative error.  After any call, te_last_message() is one line saying what
 * happened ("" after a plain success).  A failing call changes nothing; no call aborts or exits
 * the host process, and no Python exception crosses this boundary.  A model handle is an opaque
 * token, never dereferenced: a closed one is refused with TE_ERR_CLOSED.
 *
 * Words are 64-bit block-stream words in host byte order (docs/encoding.md); payloads are
 * tile-store byte images and definedness bitmaps (docs/state-format.md).
 */
#ifndef TILE_EMU_H
#define TILE_EMU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- BEGIN CDEF: what follows up to END CDEF is also the cffi declaration of the library */

enum te_code {
    TE_OK = 0,                /* done */
    TE_MISMATCH = 1,          /* te_compare / te_check: the DUT's records differ (te_last_message says where) */
    TE_FAULT = 2,             /* te_step: the model rejected the block (IllegalBlockException); its fault record is the step's record */
    TE_ERR_NULL = -1,         /* a pointer argument that must not be NULL is NULL */
    TE_ERR_BUFFER = -2,       /* a caller buffer is too small: the count/size outputs hold what is needed */
    TE_ERR_DECODE = -3,       /* te_step: the words do not decode to exactly one block (a DECODE_ERROR fault record) */
    TE_ERR_STATE_FILE = -4,   /* te_open*: the state file is missing, unreadable or damaged */
    TE_ERR_PROFILE = -5,      /* no numeric profile of that name */
    TE_ERR_CLOSED = -6,       /* the model handle was closed */
    TE_ERR_ARG = -7,          /* an argument out of range: PE, GPR, tile, element, field code, descriptor, handle */
    TE_ERR_IO = -8,           /* te_save: the file cannot be written */
    TE_ERR_ORDER = -9,        /* a call out of order (te_dut_element before te_dut_commit, records before any step) */
    TE_ERR_PYTHON = -10,      /* an unexpected exception inside tile-emu (a bug): the message names it */
    TE_ERR_INIT = -11,        /* the embedded Python interpreter or tile-emu could not be started */
    TE_ERR_UNAVAILABLE = -12  /* this machine cannot run the backend asked for (gpu without a usable GPU) */
};

enum te_kind { TE_COMMIT = 0, TE_FAULT_RECORD = 1 };            /* te_record.record */
enum te_tile_kind { TE_NUMERIC = 0, TE_PREDICATE = 1 };        /* te_desc.kind */
enum te_location { TE_LOCAL = 0, TE_MATRIX = 1 };              /* te_desc.location */
enum te_representation { TE_STANDARD = 0, TE_CUBE = 1 };       /* te_desc.representation */

/* Field codes of te_record_field, te_tile_field and te_difference_field (the DPI-C accessors). */
enum te_field {
    TE_F_RECORD = 0, TE_F_MACHINE = 1, TE_F_BLOCK = 2, TE_F_OFFSET = 3, TE_F_PE = 4, TE_F_TILE = 5,
    TE_F_DATATYPE = 6, TE_F_KIND = 7, TE_F_LOCATION = 8, TE_F_REPRESENTATION = 9, TE_F_ROW = 10,
    TE_F_COL = 11, TE_F_VALID_ROW = 12, TE_F_VALID_COL = 13, TE_F_LAYOUT = 14, TE_F_CAPACITY = 15,
    TE_F_ELEMENTS = 16, TE_F_CONTAINER = 17, TE_F_STATUS = 18, TE_F_BLOCK_DATATYPE = 19,
    TE_F_ELEMENT = 20, TE_F_EXPECTED = 21, TE_F_ACTUAL = 22
};

typedef struct te_model te_model;      /* opaque */

typedef struct te_desc {               /* a tile descriptor (docs/machine.md, "Tile descriptor") */
    int32_t  datatype;                 /* DataType code (docs/encoding.md, isa/datatypes.py); -1: predicate */
    uint32_t kind;                     /* TE_NUMERIC | TE_PREDICATE */
    uint32_t location;                 /* TE_LOCAL | TE_MATRIX */
    uint32_t representation;           /* TE_STANDARD | TE_CUBE */
    uint32_t row, col, valid_row, valid_col;
    uint32_t layout;                   /* B.DATR Layout code (docs/layouts.md); 0 = NORM */
    uint32_t has_fmap;                 /* out: the tile carries a TIMG2COL feature-map descriptor */
    uint64_t capacity;                 /* bytes of its store the tile holds */
    uint64_t elements;                 /* out: physical elements */
    uint32_t container_bits;           /* out: bits per element container (1 for a predicate) */
    uint64_t payload_bytes;            /* out: bytes of the tile-store image */
    uint64_t defined_bytes;            /* out: bytes of the definedness bitmap */
} te_desc;

typedef struct te_record {             /* one commit-log record (docs/commit-log.md) */
    uint32_t machine;                  /* the machine of a batch (0 for one model) */
    uint32_t record;                   /* TE_COMMIT | TE_FAULT_RECORD */
    uint64_t block;                    /* the block's index: blocks committed through te_step before it */
    int64_t  offset;                   /* the byte offset te_step was given; -1 for none */
    char     mnemonic[16];             /* "TADD", ...; "" when the block names none */
    int32_t  block_datatype;           /* BSTART's DataType code; -1 for none */
    uint32_t pe;                       /* commit: the PE */
    uint32_t tile;                     /* commit: the destination tile id */
    te_desc  desc;                     /* commit: the destination's descriptor */
    uint32_t status;                   /* commit: the PE's numeric status after the block (NV=1 DZ=2 OF=4 UF=8 NX=16) */
    char     reason[32];               /* fault: the reason code (DECODE_ERROR for words that do not decode) */
    char     field[32];                /* fault: the descriptor field it names ("" for a decode fault) */
    uint64_t payload_offset;           /* commit: where its payload starts in the data buffer */
    uint64_t defined_offset;           /* commit: where its definedness bitmap starts in the data buffer */
} te_record;

typedef struct te_difference {         /* the first difference of a te_compare / te_check */
    uint32_t machine;
    int64_t  block;                    /* -1: none */
    int32_t  pe;                       /* -1: a record-level difference of the block */
    int64_t  tile;                     /* -1: none */
    int64_t  element;                  /* physical element index; -1: not an element difference */
    int64_t  row, col;                 /* its logical position; -1 */
    char     field[32];                /* payload, defined, status, record, reason, field, descriptor */
    uint64_t expected, actual;         /* the two raw encodings of an element difference */
    int32_t  expected_defined, actual_defined;
} te_difference;

/* ---- models */
int te_open(const char *state_path, const char *profile, te_model **model);
int te_new(const char *profile, uint64_t local_bytes, uint64_t matrix_bytes, te_model **model);
int te_open_batch(const char *state_path, const char *profile, const char *backend, te_model **model);
int te_batch(te_model *const *models, uint32_t count, const char *backend, te_model **model);
int te_batch_machine(te_model *batch, uint32_t machine, te_model **model);
int te_machines(te_model *model, uint32_t *count);
int te_save(te_model *model, const char *path);
int te_close(te_model *model);

/* ---- stepping: one block; its records stay in the model until the next step */
int te_step(te_model *model, const uint64_t *words, uint32_t nwords, int64_t offset, uint32_t *records, uint64_t *data_bytes);
int te_records(te_model *model, te_record *records, uint32_t capacity, uint8_t *data, uint64_t data_capacity, uint32_t *count, uint64_t *data_bytes);
int te_push_word(te_model *model, uint64_t word);
int te_step_pushed(te_model *model, int64_t offset, uint32_t *records);
int te_record_field(te_model *model, uint32_t index, int32_t field, int64_t *value);
int te_record_element(te_model *model, uint32_t index, uint32_t element, uint64_t *value, int32_t *defined);

/* ---- comparing the DUT's commits with the model's records of the last step */
int te_compare(te_model *model, const te_record *actual, uint32_t count, const uint8_t *data, uint64_t data_bytes, te_difference *difference);
int te_dut_commit(te_model *model, uint32_t machine, uint32_t pe, uint32_t tile);
int te_dut_status(te_model *model, uint32_t status);
int te_dut_element(te_model *model, uint32_t element, uint64_t value, int32_t defined);
int te_dut_fault(te_model *model, uint32_t machine, const char *reason, const char *field);
int te_check(te_model *model);
int te_last_difference(te_model *model, te_difference *difference);
int te_difference_field(te_model *model, int32_t field, int64_t *value);

/* ---- state: tiles, GPRs, status (one model; a batch: te_batch_machine) */
int te_tile_ids(te_model *model, uint32_t pe, uint32_t *ids, uint32_t capacity, uint32_t *count);
int te_read_tile(te_model *model, uint32_t pe, uint32_t tile, te_desc *desc, uint8_t *payload, uint64_t payload_capacity, uint8_t *defined, uint64_t defined_capacity);
int te_write_tile(te_model *model, uint32_t pe, uint32_t tile, const te_desc *desc, const uint8_t *payload, uint64_t payload_bytes, const uint8_t *defined, uint64_t defined_bytes);
int te_tile_count(te_model *model, uint32_t pe, uint32_t *count);
int te_tile_id(te_model *model, uint32_t pe, uint32_t index, uint32_t *tile);
int te_tile_field(te_model *model, uint32_t pe, uint32_t tile, int32_t field, int64_t *value);
int te_tile_element(te_model *model, uint32_t pe, uint32_t tile, uint32_t element, uint64_t *value, int32_t *defined);
int te_get_gpr(te_model *model, uint32_t pe, uint32_t index, uint64_t *value);
int te_set_gpr(te_model *model, uint32_t pe, uint32_t index, uint64_t value);
int te_get_status(te_model *model, uint32_t pe, uint32_t *status);

/* ---- messages */
const char *te_last_message(void);
const char *te_code_name(int code);
const char *te_version(void);

/* ---- END CDEF */

#ifdef __cplusplus
}
#endif

#endif /* TILE_EMU_H */
