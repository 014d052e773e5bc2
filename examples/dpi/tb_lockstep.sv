// Lockstep testbench: te_dut against tile-emu through DPI-C, one block at a time.
//
//   +cases=FILE   one case a line: INIT.arrow WORDS.hex NWORDS NAME (examples/dpi/run.py writes them)
//   +trace        one line per block: whether the DUT executed it (and was checked) or the model did
//
// Per case: the model opens INIT (tile_emu_pkg::te_scoreboard), the DUT's tile stores are loaded
// from the model's tiles, then every block of WORDS goes to both: the model steps it (DPI-C), the
// DUT executes it, and every tile the DUT commits is compared with the model's commit record
// (scoreboard.svh).  A block the DUT does not implement is executed by the model alone and its
// results are written into the DUT's stores.  The first difference stops the run:
//   FAIL case NAME block B: machine 0 block B PE1 tile 7 element 3 [0,3] S16: expected ..., got ...
// otherwise the last line is  PASS: C cases, B blocks: X executed by the DUT (Y commits checked), Z by the model
module tb_lockstep;
    import tile_emu_pkg::*;

    logic clk = 0;
    always #5 clk = ~clk;

    logic        rst = 0, in_valid = 0, in_last = 0;
    logic [63:0] in_word = 0;
    logic        done, executed;
    logic [3:0]  commit_mask;
    logic [15:0] commit_tile;
    logic [19:0] commit_status;
    logic [1:0]  rd_pe = 0;
    logic [15:0] rd_tile = 0, rd_index = 0;
    logic        rd_held, rd_defined;
    logic [63:0] rd_value;
    logic [15:0] rd_elements;
    logic        wr_desc = 0, wr_elem = 0, wr_held = 0, wr_defined = 0;
    logic [1:0]  wr_pe = 0;
    logic [15:0] wr_tile = 0, wr_rows = 0, wr_cols = 0, wr_vrow = 0, wr_vcol = 0, wr_index = 0;
    logic [4:0]  wr_dtype = 0;
    logic [3:0]  wr_layout = 0;
    logic [63:0] wr_value = 0;

    te_dut #(.TILES(32), .ELEMS(64)) dut (.*);

    `include "scoreboard.svh"

    localparam int TILES = 32, ELEMS = 64;
    longint unsigned prog [0:65535];

    // One tile into the DUT's store: from the model's state (rec < 0) or from record `rec` of
    // the last step.  A tile the DUT cannot hold (id, size, a predicate) is dropped there.
    task automatic load_tile(int pe, int tile, int rec);
        longint kind, n, dt, rows, cols, vr, vc, lay;
        bit d;
        longint unsigned v;
        if (tile >= TILES) return;
        if (rec < 0) begin
            kind = sb.tile_field(pe, tile, TE_F_KIND);
            n = sb.tile_field(pe, tile, TE_F_ELEMENTS);
            dt = sb.tile_field(pe, tile, TE_F_DATATYPE);
            rows = sb.tile_field(pe, tile, TE_F_ROW);
            cols = sb.tile_field(pe, tile, TE_F_COL);
            vr = sb.tile_field(pe, tile, TE_F_VALID_ROW);
            vc = sb.tile_field(pe, tile, TE_F_VALID_COL);
            lay = sb.tile_field(pe, tile, TE_F_LAYOUT);
        end else begin
            kind = sb.field(rec, TE_F_KIND);
            n = sb.field(rec, TE_F_ELEMENTS);
            dt = sb.field(rec, TE_F_DATATYPE);
            rows = sb.field(rec, TE_F_ROW);
            cols = sb.field(rec, TE_F_COL);
            vr = sb.field(rec, TE_F_VALID_ROW);
            vc = sb.field(rec, TE_F_VALID_COL);
            lay = sb.field(rec, TE_F_LAYOUT);
        end
        @(negedge clk);
        wr_pe = 2'(pe);
        wr_tile = 16'(tile);
        wr_held = kind == 0 && n <= ELEMS;
        wr_dtype = 5'(dt);
        wr_rows = 16'(rows);
        wr_cols = 16'(cols);
        wr_vrow = 16'(vr);
        wr_vcol = 16'(vc);
        wr_layout = 4'(lay);
        wr_desc = 1;
        @(negedge clk);
        wr_desc = 0;
        if (!wr_held) return;
        for (int e = 0; e < n; e++) begin
            v = (rec < 0) ? sb.tile_element(pe, tile, e, d) : sb.element(rec, e, d);
            wr_index = 16'(e);
            wr_value = v;
            wr_defined = d;
            wr_elem = 1;
            @(negedge clk);
        end
        wr_elem = 0;
    endtask

    task automatic drive_block(longint unsigned words[$]);
        foreach (words[i]) begin
            @(negedge clk);
            in_valid = 1;
            in_word = words[i];
            in_last = (i == words.size() - 1);
        end
        @(negedge clk);
        in_valid = 0;
        in_last = 0;
        @(posedge done);
        #1;
    endtask

    // Every case of the +cases file; returns at the first FAIL (the caller finishes the run).
    task automatic run_all();
        string cases, init, hex, name;
        int fd, nwords, ncases = 0, nblocks = 0, by_dut = 0, by_model = 0, commits = 0, rc;
        bit trace = $test$plusargs("trace");
        if (!$value$plusargs("cases=%s", cases)) begin
            $display("FAIL: no +cases=FILE");
            return;
        end
        fd = $fopen(cases, "r");
        if (fd == 0) begin
            $display("FAIL: cannot open %s", cases);
            return;
        end
        while ($fscanf(fd, "%s %s %d %s\n", init, hex, nwords, name) == 4) begin
            int pc, b;
            pc = 0;
            b = 0;
            sb = new(init, "");
            if (!sb.ok()) begin
                $display("FAIL case %s: the model: %s", name, sb.error);
                return;
            end
            @(negedge clk) rst = 1;
            @(negedge clk) rst = 0;
            for (int pe = 0; pe < 4; pe++)
                for (int i = 0; i < int'(sb.tile_count(pe)); i++)
                    load_tile(pe, int'(sb.tile_id(pe, i)), -1);
            $readmemh(hex, prog, 0, nwords - 1);
            while (pc < nwords) begin
                longint unsigned words[$];
                int len;
                len = 1 + int'(prog[pc][15:8]);           // BSTART and its N descriptor words
                words.delete();
                for (int i = 0; i < len && pc + i < nwords; i++) words.push_back(prog[pc + i]);
                rc = model_step(words, 16 + 8 * pc);
                if (rc != TE_OK) begin
                    $display("FAIL case %s block %0d: the model: %s", name, b, sb.error);
                    return;
                end
                drive_block(words);
                if (executed) begin
                    check_commits(rc);
                    if (rc != TE_OK) begin
                        $display("FAIL case %s block %0d: %s", name, b, sb.error);
                        return;
                    end
                    by_dut++;
                    commits += $countones(commit_mask);
                end else begin
                    for (int r = 0; r < int'(sb.records); r++)
                        if (sb.field(r, TE_F_RECORD) == 0)
                            load_tile(int'(sb.field(r, TE_F_PE)), int'(sb.field(r, TE_F_TILE)), r);
                    by_model++;
                end
                if (trace && executed) $display("TRACE case %s block %0d %016h dut", name, b, words[0]);
                if (trace && !executed) $display("TRACE case %s block %0d %016h model", name, b, words[0]);
                pc += len;
                b++;
                nblocks++;
            end
            sb.close();
            ncases++;
        end
        $fclose(fd);
        $display("PASS: %0d cases, %0d blocks: %0d executed by the DUT (%0d commits checked), %0d by the model",
                 ncases, nblocks, by_dut, commits, by_model);
    endtask

    initial begin
        run_all();
        $finish;
    end
endmodule
