// tile_emu_pkg.sv -- tile-emu's golden model in a SystemVerilog testbench, through DPI-C.
//
// Link libtile_emu (tile-emu cosim build --out DIR) into the simulation; docs/cosim-c.md.
// The imports below are the DPI-C view of tile_emu.h's scalar functions: only int, longint,
// chandle and string cross, so no simulator header (svdpi.h) is needed to build the library and
// any DPI-C simulator links it.  `te_scoreboard` is a thin class over them: open, step a block word
// by word, read the model's records, give the DUT's commits and check them.
package tile_emu_pkg;

  // ---- status codes (tile_emu.h, enum te_code)
  localparam int TE_OK = 0;
  localparam int TE_MISMATCH = 1;
  localparam int TE_FAULT = 2;
  localparam int TE_ERR_NULL = -1;
  localparam int TE_ERR_BUFFER = -2;
  localparam int TE_ERR_DECODE = -3;
  localparam int TE_ERR_STATE_FILE = -4;
  localparam int TE_ERR_PROFILE = -5;
  localparam int TE_ERR_CLOSED = -6;
  localparam int TE_ERR_ARG = -7;
  localparam int TE_ERR_IO = -8;
  localparam int TE_ERR_ORDER = -9;
  localparam int TE_ERR_PYTHON = -10;
  localparam int TE_ERR_INIT = -11;
  localparam int TE_ERR_UNAVAILABLE = -12;

  // ---- field codes (tile_emu.h, enum te_field)
  localparam int TE_F_RECORD = 0;         // 0 commit, 1 fault
  localparam int TE_F_MACHINE = 1;
  localparam int TE_F_BLOCK = 2;
  localparam int TE_F_OFFSET = 3;
  localparam int TE_F_PE = 4;
  localparam int TE_F_TILE = 5;
  localparam int TE_F_DATATYPE = 6;       // DataType code; -1 predicate
  localparam int TE_F_KIND = 7;           // 0 numeric, 1 predicate
  localparam int TE_F_LOCATION = 8;       // 0 Local, 1 Matrix
  localparam int TE_F_REPRESENTATION = 9; // 0 standard, 1 cube
  localparam int TE_F_ROW = 10;
  localparam int TE_F_COL = 11;
  localparam int TE_F_VALID_ROW = 12;
  localparam int TE_F_VALID_COL = 13;
  localparam int TE_F_LAYOUT = 14;
  localparam int TE_F_CAPACITY = 15;
  localparam int TE_F_ELEMENTS = 16;
  localparam int TE_F_CONTAINER = 17;
  localparam int TE_F_STATUS = 18;
  localparam int TE_F_BLOCK_DATATYPE = 19;
  localparam int TE_F_ELEMENT = 20;
  localparam int TE_F_EXPECTED = 21;
  localparam int TE_F_ACTUAL = 22;

  // ---- the DPI-C imports (tile_emu.h)
  import "DPI-C" function int te_open(input string state_path, input string profile, output chandle model);
  import "DPI-C" function int te_new(input string profile, input longint unsigned local_bytes,
                                     input longint unsigned matrix_bytes, output chandle model);
  import "DPI-C" function int te_open_batch(input string state_path, input string profile, input string backend,
                                            output chandle model);
  import "DPI-C" function int te_batch_machine(input chandle batch, input int unsigned machine, output chandle model);
  import "DPI-C" function int te_machines(input chandle model, output int unsigned count);
  import "DPI-C" function int te_save(input chandle model, input string path);
  import "DPI-C" function int te_close(input chandle model);
  import "DPI-C" function int te_push_word(input chandle model, input longint unsigned word);
  import "DPI-C" function int te_step_pushed(input chandle model, input longint offset, output int unsigned records);
  import "DPI-C" function int te_record_field(input chandle model, input int unsigned index, input int field,
                                              output longint value);
  import "DPI-C" function int te_record_element(input chandle model, input int unsigned index,
                                                input int unsigned element, output longint unsigned value,
                                                output int defined);
  import "DPI-C" function int te_dut_commit(input chandle model, input int unsigned machine, input int unsigned pe,
                                            input int unsigned tile);
  import "DPI-C" function int te_dut_status(input chandle model, input int unsigned status);
  import "DPI-C" function int te_dut_element(input chandle model, input int unsigned element,
                                             input longint unsigned value, input int defined);
  import "DPI-C" function int te_dut_fault(input chandle model, input int unsigned machine, input string reason,
                                           input string field);
  import "DPI-C" function int te_check(input chandle model);
  import "DPI-C" function int te_difference_field(input chandle model, input int field, output longint value);
  import "DPI-C" function int te_tile_count(input chandle model, input int unsigned pe, output int unsigned count);
  import "DPI-C" function int te_tile_id(input chandle model, input int unsigned pe, input int unsigned index,
                                         output int unsigned tile);
  import "DPI-C" function int te_tile_field(input chandle model, input int unsigned pe, input int unsigned tile,
                                            input int field, output longint value);
  import "DPI-C" function int te_tile_element(input chandle model, input int unsigned pe, input int unsigned tile,
                                              input int unsigned element, output longint unsigned value,
                                              output int defined);
  import "DPI-C" function int te_get_gpr(input chandle model, input int unsigned pe, input int unsigned index,
                                         output longint unsigned value);
  import "DPI-C" function int te_set_gpr(input chandle model, input int unsigned pe, input int unsigned index,
                                         input longint unsigned value);
  import "DPI-C" function int te_get_status(input chandle model, input int unsigned pe, output int unsigned status);
  import "DPI-C" function string te_last_message();
  import "DPI-C" function string te_code_name(input int code);
  import "DPI-C" function string te_version();

  // ---- a thin class: one model, the scoreboard's helper
  class te_scoreboard;
    chandle h;
    int status;             // the last call's code (TE_OK ...)
    string error;           // its message when it was not TE_OK
    int unsigned records;   // records of the last step

    // Open a state file ("" = an empty machine) under a numeric profile ("" = the file's).
    function new(string state_path = "", string profile = "");
      status = te_open(state_path, profile, h);
      note();
    endfunction

    local function int note();
      error = (status == TE_OK) ? "" : $sformatf("%s: %s", te_code_name(status), te_last_message());
      return status;
    endfunction

    function bit ok();
      return status == TE_OK;
    endfunction

    // Step one block: its words in order, and its byte offset in the stream (-1: none).
    // TE_OK, TE_FAULT (the model rejected it: one fault record) or an error.
    function int step(longint unsigned words[$], longint offset = -1);
      foreach (words[i]) void'(te_push_word(h, words[i]));
      status = te_step_pushed(h, offset, records);
      return note();
    endfunction

    // A field (TE_F_...) of record `index` of the last step.
    function longint field(int unsigned index, int code);
      longint v;
      status = te_record_field(h, index, code, v);
      void'(note());
      return v;
    endfunction

    // Physical element `e` of commit record `index`: its encoding, and whether it is defined.
    function longint unsigned element(int unsigned index, int unsigned e, output bit defined);
      longint unsigned v;
      int d;
      status = te_record_element(h, index, e, v, d);
      void'(note());
      defined = (d != 0);
      return v;
    endfunction

    // The DUT's side of the last step: each commit (PE, tile, its 5 status bits or -1 when the
    // DUT has none), its elements, then check(): TE_OK, or TE_MISMATCH with `error` naming the
    // first difference (block, PE, tile, element, decoded values).
    function void dut_commit(int unsigned pe, int unsigned tile, int flags = -1, int unsigned machine = 0);
      status = te_dut_commit(h, machine, pe, tile);
      if (status == TE_OK && flags >= 0) status = te_dut_status(h, flags);
      void'(note());
    endfunction

    function void dut_element(int unsigned e, longint unsigned value, bit defined = 1);
      status = te_dut_element(h, e, value, int'(defined));
      void'(note());
    endfunction

    function void dut_fault(string reason, string fault_field = "", int unsigned machine = 0);
      status = te_dut_fault(h, machine, reason, fault_field);
      void'(note());
    endfunction

    function int check();
      status = te_check(h);
      error = (status == TE_OK) ? "" : te_last_message();
      return status;
    endfunction

    // The model's tiles (the DUT's initial state comes from here).
    function int unsigned tile_count(int unsigned pe);
      int unsigned n;
      status = te_tile_count(h, pe, n);
      void'(note());
      return n;
    endfunction

    function int unsigned tile_id(int unsigned pe, int unsigned index);
      int unsigned t;
      status = te_tile_id(h, pe, index, t);
      void'(note());
      return t;
    endfunction

    function longint tile_field(int unsigned pe, int unsigned tile, int code);
      longint v;
      status = te_tile_field(h, pe, tile, code, v);
      void'(note());
      return v;
    endfunction

    function longint unsigned tile_element(int unsigned pe, int unsigned tile, int unsigned e, output bit defined);
      longint unsigned v;
      int d;
      status = te_tile_element(h, pe, tile, e, v, d);
      void'(note());
      defined = (d != 0);
      return v;
    endfunction

    function int save(string path);
      status = te_save(h, path);
      return note();
    endfunction

    function void close();
      status = te_close(h);
      void'(note());
    endfunction
  endclass

endpackage
