// A small DUT for the DPI-C lockstep example (docs/cosim-c.md): four PEs with a tile store each,
// fed the 64-bit words of one block at a time, that executes the integer element-wise binary
// blocks of seed 004 -- TADD TSUB TMUL TAND TOR TXOR TSHL TSHR TMAX TMIN on U8..U64, S8..S64 --
// on NORM tiles of at most ELEMS elements, PadValue outside ValidRow x ValidCol included.
//
// Every other block it does not implement: it raises `done` with `executed` low and changes
// nothing; the testbench then writes the model's results into its store through the backdoor
// port (wr_*), as a partial DUT is brought up against a golden model.  It has no preflight: the
// blocks it is given are legal (stream goldens of class `legal`).
//
// Define SEEDED_BUG for the copy with one bug: TSUB computes b - a.
module te_dut #(parameter int TILES = 32, parameter int ELEMS = 64, parameter int MAX_WORDS = 16) (
    input  logic        clk,
    input  logic        rst,              // empties every tile store
    // the block, one word a clock, its last word marked
    input  logic        in_valid,
    input  logic [63:0] in_word,
    input  logic        in_last,
    // the block's outcome, valid with `done` (one clock)
    output logic        done,
    output logic        executed,         // 0: a block this DUT does not implement (nothing changed)
    output logic [3:0]  commit_mask,      // PEs that committed its destination
    output logic [15:0] commit_tile,
    output logic [19:0] commit_status,    // 5 flag bits per PE (integer blocks raise none)
    // read port (combinational): element rd_index of tile rd_tile on PE rd_pe
    input  logic [1:0]  rd_pe,
    input  logic [15:0] rd_tile,
    input  logic [15:0] rd_index,
    output logic        rd_held,
    output logic [63:0] rd_value,
    output logic        rd_defined,
    output logic [15:0] rd_elements,
    // backdoor write port: a descriptor (wr_desc; wr_held 0 drops the tile) or an element (wr_elem)
    input  logic        wr_desc,
    input  logic        wr_elem,
    input  logic [1:0]  wr_pe,
    input  logic [15:0] wr_tile,
    input  logic        wr_held,
    input  logic [4:0]  wr_dtype,
    input  logic [15:0] wr_rows,
    input  logic [15:0] wr_cols,
    input  logic [15:0] wr_vrow,
    input  logic [15:0] wr_vcol,
    input  logic [3:0]  wr_layout,
    input  logic [15:0] wr_index,
    input  logic [63:0] wr_value,
    input  logic        wr_defined
);
    localparam logic [7:0] TAG_BSTART = 8'h01, TAG_IOT = 8'h02, TAG_DIM = 8'h03, TAG_DATR = 8'h04;
    localparam logic [7:0] F_ADD = 0, F_SUB = 1, F_MUL = 2, F_AND = 6, F_OR = 7, F_XOR = 8, F_SHL = 9, F_SHR = 10,
                           F_MAX = 11, F_MIN = 12;

    // ---------------------------------------------------------------- the tile stores
    logic        held   [4][TILES];
    logic [4:0]  dtype  [4][TILES];
    logic [15:0] rows   [4][TILES];
    logic [15:0] cols   [4][TILES];
    logic [15:0] vrow   [4][TILES];
    logic [15:0] vcol   [4][TILES];
    logic [3:0]  layout [4][TILES];
    logic [63:0] mem    [4][TILES][ELEMS];
    logic        dfn    [4][TILES][ELEMS];

    wire rd_ok = rd_tile < TILES && rd_index < ELEMS;
    assign rd_held = rd_tile < TILES && held[rd_pe][rd_tile[4:0]];
    assign rd_value = rd_ok ? mem[rd_pe][rd_tile[4:0]][rd_index[5:0]] : 64'd0;
    assign rd_defined = rd_ok && dfn[rd_pe][rd_tile[4:0]][rd_index[5:0]];
    assign rd_elements = rd_held ? rows[rd_pe][rd_tile[4:0]] * cols[rd_pe][rd_tile[4:0]] : 16'd0;

    // ---------------------------------------------------------------- DataTypes
    function automatic logic is_int(logic [4:0] d);          // S64 S32 S16 S8, U64 U32 U16 U8
        return (d >= 5'd15 && d <= 5'd18) || (d >= 5'd20 && d <= 5'd23);
    endfunction
    function automatic logic is_signed(logic [4:0] d);
        return d >= 5'd15 && d <= 5'd18;
    endfunction
    function automatic int width(logic [4:0] d);
        case (d)
            5'd15, 5'd20: return 64;
            5'd16, 5'd21: return 32;
            5'd17, 5'd22: return 16;
            default:      return 8;
        endcase
    endfunction
    function automatic logic [63:0] mask_of(int w);
        return (w == 64) ? {64{1'b1}} : ((64'd1 << w) - 64'd1);
    endfunction

    // One element of an integer binary block: modulo 2^W; shifts by the low log2(W) bits of b;
    // TSHR fills with the sign for S* (Decision 066); TMAX/TMIN compare as the DataType does.
    function automatic logic [63:0] alu(logic [7:0] f, logic [4:0] d, logic [63:0] a_in, logic [63:0] b_in);
        int w = width(d);
        logic [63:0] m = mask_of(w);
        logic [63:0] a = a_in & m, b = b_in & m;
        logic [63:0] sign = 64'd1 << (w - 1);
        logic signed [63:0] sa = (is_signed(d) && (a & sign) != 0) ? signed'(a | ~m) : signed'(a);
        logic signed [63:0] sb = (is_signed(d) && (b & sign) != 0) ? signed'(b | ~m) : signed'(b);
        logic [5:0] count = b[5:0] & 6'(w - 1);
        logic less = is_signed(d) ? (sa < sb) : (a < b);
        logic [63:0] y;
        case (f)
            F_ADD: y = a + b;
`ifdef SEEDED_BUG
            F_SUB: y = b - a;                                  // SEEDED BUG: the operands swapped
`else
            F_SUB: y = a - b;
`endif
            F_MUL: y = a * b;
            F_AND: y = a & b;
            F_OR:  y = a | b;
            F_XOR: y = a ^ b;
            F_SHL: y = a << count;
            F_SHR: y = is_signed(d) ? 64'(sa >>> count) : (a >> count);
            F_MAX: y = less ? b : a;
            F_MIN: y = less ? a : b;
            default: y = 64'd0;
        endcase
        return y & m;
    endfunction

    // PadValue's encoding (Decision 056): Zero, Max, Min of the DataType; Null leaves it undefined
    function automatic logic [63:0] pad_value(logic [1:0] pad, logic [4:0] d);
        int w = width(d);
        case (pad)
            2'd1: return is_signed(d) ? (mask_of(w) >> 1) : mask_of(w);
            2'd2: return is_signed(d) ? (64'd1 << (w - 1)) : 64'd0;
            default: return 64'd0;
        endcase
    endfunction

    // ---------------------------------------------------------------- the block
    logic [63:0] words [MAX_WORDS];
    int          nwords;
    logic        busy;                      // a whole block is in `words`
    logic        overflow;

    // decoded fields
    logic [7:0]  mode, func;
    logic [4:0]  bdt;
    int          n_iot;
    logic        has_dim, other_word, datr_other;
    logic [15:0] t_src [2];
    logic [15:0] t_dst;
    logic [3:0]  pe_mask;
    logic        cap_present;
    logic [31:0] cap;
    logic [15:0] d_vcol, d_vrow, d_col;
    logic [1:0]  d_pad;
    logic [3:0]  d_layout;

    always_comb begin
        mode = words[0][23:16];
        func = words[0][31:24];
        bdt = words[0][36:32];
        n_iot = 0;
        has_dim = 0;
        other_word = 0;
        datr_other = 0;
        t_src[0] = 0;
        t_src[1] = 0;
        t_dst = 0;
        pe_mask = 0;
        cap_present = 0;
        cap = 0;
        d_vcol = 0;
        d_vrow = 1;
        d_col = 0;
        d_pad = 2'd3;
        d_layout = 0;
        for (int i = 1; i < MAX_WORDS; i++) begin
            if (i < nwords) begin
                case (words[i][7:0])
                    TAG_IOT: begin
                        if (n_iot < 2) t_src[n_iot] = words[i][31:16];
                        t_dst = words[i][31:16];
                        pe_mask = words[i][11:8];
                        cap_present = words[i][12];
                        cap = words[i][63:32];
                        n_iot = n_iot + 1;
                    end
                    TAG_DIM: begin
                        has_dim = 1;
                        d_vcol = words[i][31:16];
                        if (words[i][9]) d_vrow = words[i][47:32];
                        d_col = words[i][10] ? words[i][63:48] : words[i][31:16];
                    end
                    TAG_DATR: begin
                        if (words[i][8]) d_pad = words[i][17:16];
                        if (words[i][14]) d_layout = words[i][47:44];
                        datr_other = (words[i][13:9] != 0);
                    end
                    default: other_word = 1;            // B.IOR, B.IOS: offsets and immediates it lacks
                endcase
            end
        end
    end

    // the destination's physical rows: ValidRow, or what its capacity holds
    logic [31:0] d_rows;
    always_comb begin
        d_rows = {16'd0, d_vrow};
        if (cap_present && d_col != 0) d_rows = (cap * 8) / (32'(d_col) * 32'(width(bdt)));
    end

    // a source fits when every selected PE holds it in the destination's shape, NORM
    function automatic logic source_ok(logic [15:0] t);
        logic ok = t < TILES;
        for (int p = 0; p < 4; p++)
            if (pe_mask[p] && ok)
                ok = held[p][t[4:0]] && dtype[p][t[4:0]] == bdt && layout[p][t[4:0]] == 0 &&
                     32'(rows[p][t[4:0]]) == d_rows && cols[p][t[4:0]] == d_col &&
                     vrow[p][t[4:0]] == d_vrow && vcol[p][t[4:0]] == d_vcol;
        return ok;
    endfunction

    wire known_op = mode == 0 && (func <= F_MUL || (func >= F_AND && func <= F_MIN));
    wire supported = !overflow && words[0][7:0] == TAG_BSTART && known_op && is_int(bdt) && n_iot == 3 &&
                     has_dim && !other_word && !datr_other && d_layout == 0 && pe_mask != 0 &&
                     t_dst < TILES && d_rows != 0 && d_col != 0 && d_vcol != 0 && d_rows * 32'(d_col) <= ELEMS &&
                     source_ok(t_src[0]) && source_ok(t_src[1]);

    // ---------------------------------------------------------------- execution
    logic [63:0] res [4][ELEMS];
    logic        res_dfn [4][ELEMS];

    always_ff @(posedge clk) begin
        done <= 1'b0;
        if (rst) begin
            for (int p = 0; p < 4; p++)
                for (int t = 0; t < TILES; t++)
                    held[p][t] <= 1'b0;
            nwords <= 0;
            busy <= 1'b0;
            overflow <= 1'b0;
        end else if (busy) begin
            // one clock: every selected PE, every element (read-old, write-new: the results are
            // computed from the stores before any of them is written)
            executed <= supported;
            commit_mask <= supported ? pe_mask : 4'd0;
            commit_tile <= t_dst;
            commit_status <= 20'd0;
            if (supported) begin
                for (int p = 0; p < 4; p++) begin
                    for (int e = 0; e < ELEMS; e++) begin
                        logic in_rect;
                        in_rect = e / int'(d_col) < int'(d_vrow) && e % int'(d_col) < int'(d_vcol);
                        res[p][e] = in_rect ? alu(func, bdt, mem[p][t_src[0][4:0]][e], mem[p][t_src[1][4:0]][e])
                                            : pad_value(d_pad, bdt);
                        res_dfn[p][e] = in_rect || d_pad != 2'd3;
                    end
                end
                for (int p = 0; p < 4; p++) begin
                    if (pe_mask[p]) begin
                        held[p][t_dst[4:0]] <= 1'b1;
                        dtype[p][t_dst[4:0]] <= bdt;
                        rows[p][t_dst[4:0]] <= d_rows[15:0];
                        cols[p][t_dst[4:0]] <= d_col;
                        vrow[p][t_dst[4:0]] <= d_vrow;
                        vcol[p][t_dst[4:0]] <= d_vcol;
                        layout[p][t_dst[4:0]] <= 4'd0;
                        for (int e = 0; e < ELEMS; e++) begin
                            mem[p][t_dst[4:0]][e] <= res[p][e];
                            dfn[p][t_dst[4:0]][e] <= res_dfn[p][e] && e < int'(d_rows) * int'(d_col);
                        end
                    end
                end
            end
            busy <= 1'b0;
            nwords <= 0;
            overflow <= 1'b0;
            done <= 1'b1;
        end else begin
            if (in_valid) begin
                if (nwords < MAX_WORDS) words[nwords] <= in_word;
                else overflow <= 1'b1;
                nwords <= nwords + 1;
                if (in_last) busy <= 1'b1;
            end
            if (wr_desc && wr_tile < TILES) begin
                held[wr_pe][wr_tile[4:0]] <= wr_held;
                dtype[wr_pe][wr_tile[4:0]] <= wr_dtype;
                rows[wr_pe][wr_tile[4:0]] <= wr_rows;
                cols[wr_pe][wr_tile[4:0]] <= wr_cols;
                vrow[wr_pe][wr_tile[4:0]] <= wr_vrow;
                vcol[wr_pe][wr_tile[4:0]] <= wr_vcol;
                layout[wr_pe][wr_tile[4:0]] <= wr_layout;
            end
            if (wr_elem && wr_tile < TILES && wr_index < ELEMS) begin
                mem[wr_pe][wr_tile[4:0]][wr_index[5:0]] <= wr_value;
                dfn[wr_pe][wr_tile[4:0]][wr_index[5:0]] <= wr_defined;
            end
        end
    end
endmodule
