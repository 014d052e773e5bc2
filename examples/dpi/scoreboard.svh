// Lockstep with tile-emu through DPI-C (docs/cosim-c.md): the model steps every block the DUT
// is given, and every tile the DUT commits is checked against the model's commit record.
// Included in a testbench module that holds `sb` and the DUT's commit and read ports.
tile_emu_pkg::te_scoreboard sb;

// The golden model executes the block the DUT is about to execute: TE_OK or TE_FAULT.
function automatic int model_step(longint unsigned words[$], longint offset);
  return sb.step(words, offset);
endfunction

// After the DUT's `done`: each tile it committed, element by element, then the check.
// TE_OK, or TE_MISMATCH with sb.error naming the block, PE, tile, element and both values.
task automatic check_commits(output int rc);
  for (int pe = 0; pe < 4; pe++) begin
    if (!commit_mask[pe]) continue;
    sb.dut_commit(pe, commit_tile, int'(commit_status[5 * pe +: 5]));
    rd_pe = 2'(pe);
    rd_tile = commit_tile;
    rd_index = 0;
    #1;
    for (int e = 0; e < int'(rd_elements); e++) begin
      rd_index = 16'(e);
      #1;
      sb.dut_element(e, rd_value, rd_defined);
    end
  end
  rc = sb.check();
endtask
