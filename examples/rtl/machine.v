// A small tile machine: executes block-stream words (docs/encoding.md) of a subset of seed 004
// on four PEs, holding its tile state.  Synthesizable Verilog-2005 (Icarus, Yosys).
// docs/rtl-machine.md documents the subset, the ports and the bench (examples/rtl/tb_machine.py).
//
//   instructions  TADD TSUB TMUL TAND TOR TXOR TSHL TSHR TMAX TMIN (binary) and TSEL
//   DataTypes     S8 S16 S32 U8 U16 U32 (integers modulo 2^W; no numeric status)
//   tiles         Local, NORM, standard representation, Row*Col <= MAXE elements; numeric or
//                 predicate (one bit per element, TSEL's mask)
//   PE_MASK       every selected PE executes; a zero mask is a no-op
//   PadValue      Zero / Max / Min / Null (omitted = Null) outside ValidRow x ValidCol
//   legality      UNASSIGNED_OPCODE, DATATYPE_RESERVED, DATATYPE_UNSUPPORTED, BINDING_COUNT,
//                 PE_MASK_MISMATCH, SOURCE_CAPACITY, DIM_MISSING, DIM_ZERO, DIM_RANGE,
//                 FIELD_NOT_APPLICABLE, IOS_NOT_ALLOWED, IOR_NOT_ALLOWED, CAPACITY,
//                 SOURCE_MISSING, SOURCE_KIND, SOURCE_DATATYPE, SHAPE_MISMATCH, ALLOCATION,
//                 SOURCE_UNDEFINED, in isa/legality.py's and emulator/preflight.py's order; an
//                 illegal block raises o_illegal with a reason and field code and has no effect
//
// A block is accepted one word per clock (in_valid & in_ready); after its last word the machine
// checks it, computes each selected PE's destination one element per clock into a free slot
// (read-old/write-new: a source that is also the destination is read from its old slot), then
// commits: the new slot takes the tile id on each selected PE and the old one is released.
// o_done pulses once per block with o_illegal/o_reason/o_field or the committed o_pes/o_tile;
// the read port (rd_pe, rd_tile, rd_idx) shows any tile's descriptor and elements.
module machine #(
    parameter SLOTS = 32,                 // tiles per PE
    parameter SB = 5,                     // log2(SLOTS)
    parameter MAXE = 64,                  // elements per tile
    parameter EB = 6                      // log2(MAXE)
) (
    input  wire        clk,
    input  wire        rst,
    input  wire [31:0] local_bytes,       // each PE's Local store size (ALLOCATION)
    // initial state: a descriptor into (ld_pe, ld_slot), or an element of it
    input  wire        ld_desc,
    input  wire        ld_elem,
    input  wire [1:0]  ld_pe,
    input  wire [SB-1:0] ld_slot,
    input  wire [15:0] ld_tile,
    input  wire        ld_pred,           // 1: predicate storage
    input  wire [4:0]  ld_dtype,
    input  wire [15:0] ld_row, ld_col, ld_vrow, ld_vcol,
    input  wire [3:0]  ld_layout,
    input  wire [31:0] ld_cap,
    input  wire [EB-1:0] ld_idx,
    input  wire [31:0] ld_data,
    input  wire        ld_def,
    // the block stream
    input  wire        in_valid,
    input  wire [63:0] in_word,
    output wire        in_ready,
    // per block
    output reg         o_done,
    output reg         o_illegal,
    output reg  [4:0]  o_reason,
    output reg  [7:0]  o_field,           // [7:4] which field, [3:0] its index (docs/rtl-machine.md)
    output reg         o_unsupported,     // the block is outside the machine's subset (not executed)
    output reg         o_full,            // no free slot on a selected PE (not executed)
    output reg  [3:0]  o_pes,             // the PEs whose destination was written
    output reg  [15:0] o_tile,            // the destination tile id
    // read port (combinational)
    input  wire [1:0]  rd_pe,
    input  wire [15:0] rd_tile,
    input  wire [EB-1:0] rd_idx,
    output wire        rd_hit,
    output wire        rd_pred,
    output wire [4:0]  rd_dtype,
    output wire [15:0] rd_row, rd_col, rd_vrow, rd_vcol,
    output wire [3:0]  rd_layout,
    output wire [31:0] rd_cap,
    output wire [31:0] rd_data,
    output wire        rd_def
);
    localparam NS = 4 * SLOTS;
    // reasons
    localparam R_UNASSIGNED = 5'd1, R_DT_RESERVED = 5'd2, R_DT_UNSUPPORTED = 5'd3, R_BINDING_COUNT = 5'd4,
               R_MASK_MISMATCH = 5'd5, R_SOURCE_CAPACITY = 5'd6, R_DIM_MISSING = 5'd7, R_DIM_ZERO = 5'd8,
               R_DIM_RANGE = 5'd9, R_NOT_APPLICABLE = 5'd10, R_IOS = 5'd11, R_IOR = 5'd12, R_CAPACITY = 5'd13,
               R_MISSING = 5'd14, R_KIND = 5'd15, R_DATATYPE = 5'd16, R_SHAPE = 5'd17, R_ALLOCATION = 5'd18,
               R_UNDEFINED = 5'd19;
    // fields: [7:4]
    localparam F_BSTART = 4'd0, F_BSTART_DT = 4'd1, F_IOT = 4'd2, F_IOT_MASK = 4'd3, F_IOT_CAP = 4'd4,
               F_IOT_I = 4'd5, F_LB0 = 4'd6, F_LB1 = 4'd7, F_LB2 = 4'd8, F_DATR = 4'd9, F_IOS = 4'd10, F_IOR = 4'd11;
    // functions
    localparam F_ADD = 8'd0, F_SUB = 8'd1, F_MUL = 8'd2, F_AND = 8'd6, F_OR = 8'd7, F_XOR = 8'd8,
               F_SHL = 8'd9, F_SHR = 8'd10, F_MAX = 8'd11, F_MIN = 8'd12, F_SEL = 8'd26;

    // ------------------------------------------------------------------ state
    reg         s_valid [0:NS-1];
    reg  [15:0] s_tile  [0:NS-1];
    reg         s_pred  [0:NS-1];
    reg  [4:0]  s_dtype [0:NS-1];
    reg  [15:0] s_row [0:NS-1], s_col [0:NS-1], s_vrow [0:NS-1], s_vcol [0:NS-1];
    reg  [3:0]  s_layout [0:NS-1];
    reg  [31:0] s_cap [0:NS-1];
    reg  [31:0] mem  [0:NS*MAXE-1];
    reg         defd [0:NS*MAXE-1];

    // ------------------------------------------------------------------ block words
    reg  [63:0] w_bstart;
    reg  [63:0] w_iot [0:3];
    reg  [8:0]  n_iot;
    reg         has_dim, has_datr, has_ior, has_ios;
    reg  [63:0] w_dim, w_datr;
    reg  [7:0]  left;                    // descriptor words still to come
    localparam ST_IDLE = 3'd0, ST_WORDS = 3'd1, ST_CHECK = 3'd2, ST_UNDEF = 3'd3, ST_EXEC = 3'd4, ST_COMMIT = 3'd5;
    reg  [2:0]  st;
    assign in_ready = (st == ST_IDLE) || (st == ST_WORDS);

    // ------------------------------------------------------------------ decoded block
    wire [7:0]  mode  = w_bstart[23:16];
    wire [7:0]  func  = w_bstart[31:24];
    wire [4:0]  dt    = w_bstart[36:32];
    wire        is_sel = func == F_SEL;
    wire [2:0]  arity = is_sel ? 3'd3 : 3'd2;
    wire        in_subset_op = mode == 8'd0 && (func == F_ADD || func == F_SUB || func == F_MUL || func == F_AND ||
                  func == F_OR || func == F_XOR || func == F_SHL || func == F_SHR || func == F_MAX ||
                  func == F_MIN || func == F_SEL);
    // every (Mode, Function) pair seed 004 assigns (isa/instructions.py)
    wire        assigned = (mode == 8'd0 && (func <= 8'd4 || (func >= 8'd6 && func <= 8'd13) || func == 8'd15 ||
                  (func >= 8'd16 && func <= 8'd23) || (func >= 8'd26 && func <= 8'd28))) ||
                  (mode == 8'd3 && func >= 8'd2 && func <= 8'd4);
    wire        int_only = func == F_AND || func == F_OR || func == F_XOR || func == F_SHL || func == F_SHR;
    wire        dt_int = dt == 5'd15 || dt == 5'd16 || dt == 5'd17 || dt == 5'd18 ||
                         dt == 5'd20 || dt == 5'd21 || dt == 5'd22 || dt == 5'd23;
    wire        dt_float = dt <= 5'd5 || dt == 5'd7 || dt == 5'd8;
    wire        dt_supported = int_only ? dt_int : (dt_int || dt_float);
    wire        dt_machine = dt == 5'd16 || dt == 5'd17 || dt == 5'd18 || dt == 5'd21 || dt == 5'd22 || dt == 5'd23;
    wire        is_signed = dt == 5'd16 || dt == 5'd17 || dt == 5'd18;
    wire [2:0]  nbytes = (dt == 5'd16 || dt == 5'd21) ? 3'd4 : (dt == 5'd17 || dt == 5'd22) ? 3'd2 : 3'd1;

    function [3:0] iot_mask;  input [63:0] w; iot_mask = w[11:8];  endfunction
    function       iot_hascap; input [63:0] w; iot_hascap = w[12]; endfunction
    function [15:0] iot_tile; input [63:0] w; iot_tile = w[31:16]; endfunction

    wire [3:0]  pe_mask = iot_mask(w_iot[0]);
    wire [63:0] w_dst = w_iot[arity];
    wire [15:0] dst_tile = iot_tile(w_dst);
    // B.DIM
    wire        lb0_p = has_dim && w_dim[8], lb1_p = has_dim && w_dim[9], lb2_p = has_dim && w_dim[10];
    wire [15:0] vcol = w_dim[31:16];
    wire [15:0] vrow = lb1_p ? w_dim[47:32] : 16'd1;
    wire [15:0] col  = lb2_p ? w_dim[63:48] : vcol;
    // B.DATR
    wire [6:0]  datr_p = has_datr ? w_datr[14:8] : 7'd0;
    wire [1:0]  pad = datr_p[0] ? w_datr[17:16] : 2'd3;          // 0 Zero 1 Max 2 Min 3 Null
    // explicit nondefault values of the fields the subset does not consume (FIELD_NOT_APPLICABLE)
    wire [6:0]  na = {datr_p[6] && w_datr[47:44] != 4'd0, datr_p[5] && w_datr[42:40] != 3'd0,
                      datr_p[4] && w_datr[36:32] != dt, datr_p[3] && w_datr[28], datr_p[2] && w_datr[24],
                      datr_p[1] && w_datr[22:20] != 3'd0, 1'b0};
    reg  [2:0]  na_idx;
    integer q;
    always @* begin
        na_idx = 3'd0;
        for (q = 6; q >= 1; q = q - 1)
            if (na[q]) na_idx = q[2:0];
    end

    // ------------------------------------------------------------------ stateless legality
    reg        sl_bad;
    reg  [4:0] sl_reason;
    reg  [7:0] sl_field;
    integer k;
    always @* begin
        sl_bad = 1'b1; sl_reason = 5'd0; sl_field = 8'd0;
        if (!assigned) begin
            sl_reason = R_UNASSIGNED; sl_field = {F_BSTART, 4'd0};
        end else if (dt >= 5'd25) begin
            sl_reason = R_DT_RESERVED; sl_field = {F_BSTART_DT, 4'd0};
        end else if (in_subset_op && !dt_supported) begin
            sl_reason = R_DT_UNSUPPORTED; sl_field = {F_BSTART_DT, 4'd0};
        end else if (in_subset_op && n_iot != {6'd0, arity} + 9'd1) begin
            sl_reason = R_BINDING_COUNT; sl_field = {F_IOT, 4'd0};
        end else begin
            sl_bad = 1'b0;
            for (k = 3; k >= 0; k = k - 1)            // the lowest failing binding wins
                if (k <= arity) begin
                    if (iot_mask(w_iot[k]) != pe_mask) begin
                        sl_bad = 1'b1; sl_reason = R_MASK_MISMATCH; sl_field = {F_IOT_MASK, k[3:0]};
                    end else if (k < arity && iot_hascap(w_iot[k])) begin
                        sl_bad = 1'b1; sl_reason = R_SOURCE_CAPACITY; sl_field = {F_IOT_CAP, k[3:0]};
                    end
                end
            if (!sl_bad) begin
                sl_bad = 1'b1;
                if (!lb0_p) begin
                    sl_reason = R_DIM_MISSING; sl_field = {F_LB0, 4'd0};
                end else if (vcol == 16'd0) begin
                    sl_reason = R_DIM_ZERO; sl_field = {F_LB0, 4'd0};
                end else if (vrow == 16'd0) begin
                    sl_reason = R_DIM_ZERO; sl_field = {F_LB1, 4'd0};
                end else if (col == 16'd0) begin
                    sl_reason = R_DIM_ZERO; sl_field = {F_LB2, 4'd0};
                end else if (vcol > col) begin
                    sl_reason = R_DIM_RANGE; sl_field = {F_LB0, 4'd0};
                end else if (na != 7'd0) begin
                    sl_reason = R_NOT_APPLICABLE; sl_field = {F_DATR, 1'b0, na_idx};
                end else if (has_ios) begin
                    sl_reason = R_IOS; sl_field = {F_IOS, 4'd0};
                end else if (has_ior) begin
                    sl_reason = R_IOR; sl_field = {F_IOR, 4'd0};
                end else
                    sl_bad = 1'b0;
            end
        end
    end

    // ------------------------------------------------------------------ destination descriptor
    wire [31:0] row_bytes = {16'd0, col} * {29'd0, nbytes};
    wire [31:0] dst_cap = iot_hascap(w_dst) ? w_dst[63:32] : {16'd0, vrow} * row_bytes;
    wire [31:0] dst_rows32 = dst_cap / row_bytes;
    wire [15:0] dst_row = (dst_rows32 > 32'hFFFF) ? 16'hFFFF : dst_rows32[15:0];
    wire        cap_bad = dst_rows32 < {16'd0, vrow};
    wire [31:0] dst_elems = {16'd0, dst_row} * {16'd0, col};
    wire        too_big = dst_elems > MAXE;

    // ------------------------------------------------------------------ slot lookup, per PE and role
    // src_slot[p][r]: the slot of source r's tile on PE p; dst_old: the slot the destination id
    // names now; free_slot: the lowest free slot
    reg  [SB-1:0] src_slot [0:11];
    reg           src_hit  [0:11];
    reg  [SB-1:0] old_slot [0:3];
    reg           old_hit  [0:3];
    reg  [SB-1:0] free_slot [0:3];
    reg           free_ok  [0:3];
    reg  [31:0]   used [0:3];
    integer p, r, s;
    always @* begin
        for (p = 0; p < 4; p = p + 1) begin
            old_hit[p] = 1'b0; old_slot[p] = 0; free_ok[p] = 1'b0; free_slot[p] = 0; used[p] = 32'd0;
            for (r = 0; r < 3; r = r + 1) begin
                src_hit[p * 3 + r] = 1'b0; src_slot[p * 3 + r] = 0;
            end
            for (s = SLOTS - 1; s >= 0; s = s - 1) begin
                if (s_valid[p * SLOTS + s]) begin
                    used[p] = used[p] + s_cap[p * SLOTS + s];
                    if (s_tile[p * SLOTS + s] == dst_tile) begin
                        old_hit[p] = 1'b1; old_slot[p] = s[SB-1:0];
                    end
                    for (r = 0; r < 3; r = r + 1)
                        if (s_tile[p * SLOTS + s] == iot_tile(w_iot[r])) begin
                            src_hit[p * 3 + r] = 1'b1; src_slot[p * 3 + r] = s[SB-1:0];
                        end
                end else begin
                    free_ok[p] = 1'b1; free_slot[p] = s[SB-1:0];
                end
            end
        end
    end

    // ------------------------------------------------------------------ stateful preflight
    // roles in binding order, PEs in order within a role (emulator/preflight.py), then allocation
    reg        sf_bad;
    reg  [4:0] sf_reason;
    reg  [7:0] sf_field;
    reg        sf_full;
    integer a, b, idx;
    always @* begin
        sf_bad = 1'b0; sf_reason = 5'd0; sf_field = 8'd0; sf_full = 1'b0;
        if (cap_bad) begin
            sf_bad = 1'b1; sf_reason = R_CAPACITY; sf_field = {F_IOT_CAP, 1'b0, arity};
        end
        for (a = 0; a < 3; a = a + 1)
            for (b = 0; b < 4; b = b + 1)
                if (!sf_bad && a < arity && pe_mask[b]) begin
                    idx = b * SLOTS + src_slot[b * 3 + a];
                    sf_bad = 1'b1; sf_field = {F_IOT_I, a[3:0]};
                    if (!src_hit[b * 3 + a])
                        sf_reason = R_MISSING;
                    else if (s_pred[idx] != (is_sel && a == 0))
                        sf_reason = R_KIND;
                    else if (!s_pred[idx] && s_dtype[idx] != dt)
                        sf_reason = R_DATATYPE;
                    else if (s_row[idx] != dst_row || s_col[idx] != col || s_vrow[idx] != vrow || s_vcol[idx] != vcol)
                        sf_reason = R_SHAPE;
                    else if (!s_pred[idx] && s_layout[idx] != 4'd0)
                        sf_reason = R_SHAPE;
                    else if (s_pred[idx] && s_cap[idx] < (dst_elems + 32'd7) / 32'd8)
                        sf_reason = R_SHAPE;
                    else
                        sf_bad = 1'b0;
                end
        for (b = 0; b < 4; b = b + 1)
            if (!sf_bad && pe_mask[b]) begin
                if (used[b] + dst_cap > local_bytes) begin
                    sf_bad = 1'b1; sf_reason = R_ALLOCATION; sf_field = {F_IOT_CAP, 1'b0, arity};
                end
                if (!free_ok[b]) sf_full = 1'b1;
            end
    end

    // ------------------------------------------------------------------ element loop
    reg  [1:0]    cur_pe;
    reg  [1:0]    cur_role;
    reg  [EB:0]   e;                  // physical element index
    reg  [15:0]   er, ec;             // its row and column
    wire          in_rect = er < vrow && ec < vcol;
`ifdef SEEDED_BUG
    // SEEDED BUG (PE_MASK): every selected PE reads its sources from the slots where the lowest
    // selected PE holds them -- right only while earlier blocks' PE_MASKs kept the PEs' stores alike
    wire [1:0]    look_pe = pe_mask[0] ? 2'd0 : pe_mask[1] ? 2'd1 : pe_mask[2] ? 2'd2 : 2'd3;
`else
    wire [1:0]    look_pe = cur_pe;
`endif
    wire [SB-1:0] sa_slot = src_slot[look_pe * 3 + (is_sel ? 1 : 0)];
    wire [SB-1:0] sb_slot = src_slot[look_pe * 3 + (is_sel ? 2 : 1)];
    wire [SB-1:0] sm_slot = src_slot[look_pe * 3];
    wire [SB-1:0] su_slot = src_slot[cur_pe * 3 + cur_role];
    wire [31:0]   ea = mem[{cur_pe, sa_slot, e[EB-1:0]}];
    wire [31:0]   eb = mem[{cur_pe, sb_slot, e[EB-1:0]}];
    wire [31:0]   em = mem[{cur_pe, sm_slot, e[EB-1:0]}];
    wire          eu_def = defd[{cur_pe, su_slot, e[EB-1:0]}];

    // integer arithmetic at width W (8, 16, 32), as the lane (alu.v)
    wire [31:0] wmask = nbytes == 3'd4 ? 32'hFFFFFFFF : nbytes == 3'd2 ? 32'h0000FFFF : 32'h000000FF;
    wire [31:0] sign_bit = nbytes == 3'd4 ? 32'h80000000 : nbytes == 3'd2 ? 32'h00008000 : 32'h00000080;
    wire [31:0] ua = ea & wmask, ub = eb & wmask;
    wire [31:0] sa = (is_signed && (ua & sign_bit) != 0) ? (ua | ~wmask) : ua;
    wire [31:0] sbx = (is_signed && (ub & sign_bit) != 0) ? (ub | ~wmask) : ub;
    wire signed [31:0] ssa = sa, ssb = sbx;
    wire [4:0]  count = ub[4:0] & (nbytes == 3'd4 ? 5'd31 : nbytes == 3'd2 ? 5'd15 : 5'd7);
    wire        a_less = is_signed ? (ssa < ssb) : (ua < ub);
    wire [31:0] shr_s = ssa >>> count;
    reg  [31:0] val;
    always @* begin
        case (func)
            F_ADD: val = ua + ub;
            F_SUB: val = ua - ub;
            F_MUL: val = ua * ub;
            F_AND: val = ua & ub;
            F_OR:  val = ua | ub;
            F_XOR: val = ua ^ ub;
            F_SHL: val = ua << count;
            F_SHR: val = is_signed ? shr_s : (ua >> count);
            F_MAX: val = a_less ? ub : ua;
            F_MIN: val = a_less ? ua : ub;
            F_SEL: val = em[0] ? ua : ub;
            default: val = 32'd0;
        endcase
    end
    wire [31:0] pad_val = pad == 2'd1 ? (is_signed ? (wmask >> 1) : wmask) :
                          pad == 2'd2 ? (is_signed ? sign_bit : 32'd0) : 32'd0;
    wire [31:0] out_val = in_rect ? (val & wmask) : pad_val;
    wire        out_def = in_rect || pad != 2'd3;

    // ------------------------------------------------------------------ the sequencer
    wire [SB-1:0] nslot = free_slot[cur_pe];
    wire          last_e = e + 1 >= dst_elems[EB:0];
    reg  [3:0]    done_pes;
    reg  [SB-1:0] new_slot [0:3];
    integer i, j;

    task finish;
        input ill; input [4:0] why; input [7:0] fld; input uns; input full;
        begin
            o_done <= 1'b1; o_illegal <= ill; o_reason <= why; o_field <= fld;
            o_unsupported <= uns; o_full <= full; o_pes <= 4'd0; o_tile <= dst_tile; st <= ST_IDLE;
        end
    endtask

    // next selected PE after cur_pe (4 = none)
    function [2:0] next_pe;
        input [3:0] m; input [1:0] from;
        integer t;
        begin
            next_pe = 3'd4;
            for (t = 3; t >= 0; t = t - 1)
                if (m[t] && t > from) next_pe = t[2:0];
        end
    endfunction
    function [2:0] first_pe;
        input [3:0] m;
        begin
            first_pe = m[0] ? 3'd0 : m[1] ? 3'd1 : m[2] ? 3'd2 : m[3] ? 3'd3 : 3'd4;
        end
    endfunction
    // the walk of ST_UNDEF and ST_EXEC over the block's elements, PE by PE: the next element of
    // this PE, else the first element of the next selected PE; `wrapped` (blocking, read in the
    // same state right after) says the last selected PE's last element was done
    reg wrapped;
    task next_element;
        begin
            wrapped = 1'b0;
            if (!last_e) begin
                e <= e + 1;
                if (ec + 16'd1 == col) begin ec <= 16'd0; er <= er + 16'd1; end else ec <= ec + 16'd1;
            end else begin
                e <= 0; er <= 16'd0; ec <= 16'd0;
                if (next_pe(pe_mask, cur_pe) != 3'd4)
                    cur_pe <= next_pe(pe_mask, cur_pe);
                else
                    wrapped = 1'b1;
            end
        end
    endtask

    always @(posedge clk) begin
        o_done <= 1'b0;
        if (rst) begin
            st <= ST_IDLE;
            for (i = 0; i < NS; i = i + 1) s_valid[i] <= 1'b0;
        end else begin
            if (ld_desc) begin
                s_valid[{ld_pe, ld_slot}] <= 1'b1;
                s_tile[{ld_pe, ld_slot}] <= ld_tile;
                s_pred[{ld_pe, ld_slot}] <= ld_pred;
                s_dtype[{ld_pe, ld_slot}] <= ld_dtype;
                s_row[{ld_pe, ld_slot}] <= ld_row;
                s_col[{ld_pe, ld_slot}] <= ld_col;
                s_vrow[{ld_pe, ld_slot}] <= ld_vrow;
                s_vcol[{ld_pe, ld_slot}] <= ld_vcol;
                s_layout[{ld_pe, ld_slot}] <= ld_layout;
                s_cap[{ld_pe, ld_slot}] <= ld_cap;
            end
            if (ld_elem) begin
                mem[{ld_pe, ld_slot, ld_idx}] <= ld_data;
                defd[{ld_pe, ld_slot, ld_idx}] <= ld_def;
            end
            case (st)
                ST_IDLE, ST_WORDS: if (in_valid) begin
                    if (st == ST_IDLE || in_word[7:0] == 8'h01) begin      // BSTART
                        w_bstart <= in_word; n_iot <= 9'd0; has_dim <= 1'b0; has_datr <= 1'b0;
                        has_ior <= 1'b0; has_ios <= 1'b0; left <= in_word[15:8];
                        for (i = 0; i < 4; i = i + 1) w_iot[i] <= 64'd0;
                        st <= (in_word[15:8] == 8'd0) ? ST_CHECK : ST_WORDS;
                    end else begin
                        case (in_word[7:0])
                            8'h02: begin
                                if (n_iot < 9'd4) w_iot[n_iot[1:0]] <= in_word;
                                n_iot <= n_iot + 9'd1;
                            end
                            8'h03: begin has_dim <= 1'b1; w_dim <= in_word; end
                            8'h04: begin has_datr <= 1'b1; w_datr <= in_word; end
                            8'h05: has_ior <= 1'b1;
                            8'h06: has_ios <= 1'b1;
                            default: ;
                        endcase
                        left <= left - 8'd1;
                        if (left == 8'd1) st <= ST_CHECK;
                    end
                end
                ST_CHECK: begin
                    if (sl_bad)
                        finish(1'b1, sl_reason, sl_field, 1'b0, 1'b0);
                    else if (!in_subset_op || !dt_machine)
                        finish(1'b0, 5'd0, 8'd0, 1'b1, 1'b0);
                    else if (pe_mask == 4'd0)
                        finish(1'b0, 5'd0, 8'd0, 1'b0, 1'b0);           // a strict no-op: no record
                    else if (sf_bad)
                        finish(1'b1, sf_reason, sf_field, 1'b0, 1'b0);
                    else if (too_big || sf_full)
                        finish(1'b0, 5'd0, 8'd0, too_big, sf_full);
                    else begin
                        cur_role <= 2'd0; cur_pe <= first_pe(pe_mask); e <= 0; er <= 16'd0; ec <= 16'd0;
                        st <= ST_UNDEF;
                    end
                end
                ST_UNDEF: begin                 // every valid source element defined: role, PE, element
                    if (in_rect && !eu_def)
                        finish(1'b1, R_UNDEFINED, {F_IOT_I, 2'b00, cur_role}, 1'b0, 1'b0);
                    else begin
                        next_element;
                        if (wrapped) begin      // every selected PE of this role: the next role, or execute
                            cur_pe <= first_pe(pe_mask);
                            if ({1'b0, cur_role} + 3'd1 < arity)
                                cur_role <= cur_role + 2'd1;
                            else begin
                                st <= ST_EXEC;
                                for (i = 0; i < 4; i = i + 1) new_slot[i] <= free_slot[i];
                            end
                        end
                    end
                end
                ST_EXEC: begin                  // each selected PE's destination into its free slot
                    mem[{cur_pe, new_slot[cur_pe], e[EB-1:0]}] <= out_val;
                    defd[{cur_pe, new_slot[cur_pe], e[EB-1:0]}] <= out_def;
                    next_element;
                    if (wrapped)
                        st <= ST_COMMIT;
                end
                ST_COMMIT: begin                // one atomic commit: rename on every selected PE
                    for (j = 0; j < 4; j = j + 1) begin
                        if (pe_mask[j]) begin
                            if (old_hit[j])
                                s_valid[j * SLOTS + old_slot[j]] <= 1'b0;
                            s_valid[j * SLOTS + new_slot[j]] <= 1'b1;
                            s_tile[j * SLOTS + new_slot[j]] <= dst_tile;
                            s_pred[j * SLOTS + new_slot[j]] <= 1'b0;
                            s_dtype[j * SLOTS + new_slot[j]] <= dt;
                            s_row[j * SLOTS + new_slot[j]] <= dst_row;
                            s_col[j * SLOTS + new_slot[j]] <= col;
                            s_vrow[j * SLOTS + new_slot[j]] <= vrow;
                            s_vcol[j * SLOTS + new_slot[j]] <= vcol;
                            s_layout[j * SLOTS + new_slot[j]] <= 4'd0;
                            s_cap[j * SLOTS + new_slot[j]] <= dst_cap;
                        end
                    end
                    finish(1'b0, 5'd0, 8'd0, 1'b0, 1'b0);
                    o_pes <= pe_mask;
                end
                default: st <= ST_IDLE;
            endcase
        end
    end

    // ------------------------------------------------------------------ read port
    reg           rh;
    reg  [SB-1:0] rs;
    integer t;
    always @* begin
        rh = 1'b0; rs = 0;
        for (t = SLOTS - 1; t >= 0; t = t - 1)
            if (s_valid[rd_pe * SLOTS + t] && s_tile[rd_pe * SLOTS + t] == rd_tile) begin
                rh = 1'b1; rs = t[SB-1:0];
            end
    end
    wire [SB+1:0] ri = {rd_pe, rs};
    assign rd_hit = rh;
    assign rd_pred = s_pred[ri];
    assign rd_dtype = s_dtype[ri];
    assign rd_row = s_row[ri];
    assign rd_col = s_col[ri];
    assign rd_vrow = s_vrow[ri];
    assign rd_vcol = s_vcol[ri];
    assign rd_layout = s_layout[ri];
    assign rd_cap = s_cap[ri];
    assign rd_data = mem[{rd_pe, rs, rd_idx}];
    assign rd_def = defd[{rd_pe, rs, rd_idx}];
endmodule
