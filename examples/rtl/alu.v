// One PE lane of the tile VEC engine: a subset of the element-wise instructions of seed 004,
// one element per clock, result registered (latency 1).  Synthesizable Verilog-2005.
//
//   integer TADD TSUB TMUL TAND TOR TXOR TSHL TSHR TMAX TMIN on U8..U64, S8..S64 (modulo 2^W;
//     TSHL/TSHR shift by the low log2(W) bits of b; TSHR fills with the sign for S*, zeros for U*)
//   E4M3 TADD TSUB TMUL: the exact result rounded once to nearest even (OCP E4M3: bias 7, no
//     infinity, NaN = S.1111.111); a NaN operand or an overflow gives the canonical NaN 0x7F;
//     tininess after rounding; flags NV DZ OF UF NX (docs/numerics.md)
//   PadValue outside ValidRow x ValidCol: Zero, Max, Min of the DataType, or Null (undefined)
//   PE_MASK: `we` says whether the block writes this lane's PE (bit `pe` of the mask)
//
// func is the TEPL carrier Function code and dtype the DataType code (isa/instructions.py,
// isa/datatypes.py).  `supported` says whether the lane implements (func, dtype).
module alu (
    input  wire        clk,
    input  wire [4:0]  func,
    input  wire [4:0]  dtype,
    input  wire        in_rect,      // the element lies inside ValidRow x ValidCol
    input  wire [1:0]  pad,         // resolved PadValue: 0 Zero, 1 Max, 2 Min, 3 Null
    input  wire [63:0] a,           // raw encodings in the low W bits
    input  wire [63:0] b,
    input  wire [1:0]  pe,          // this lane's PE
    input  wire [3:0]  pe_mask,     // the destination binding's PE_MASK
    output wire        we,          // the block writes this PE's destination
    output reg  [63:0] y,
    output reg         y_defined,
    output reg  [4:0]  flags,       // NV=1 DZ=2 OF=4 UF=8 NX=16 of this element
    output wire        supported
);
    localparam F_ADD = 5'd0, F_SUB = 5'd1, F_MUL = 5'd2, F_AND = 5'd6, F_OR = 5'd7, F_XOR = 5'd8,
               F_SHL = 5'd9, F_SHR = 5'd10, F_MAX = 5'd11, F_MIN = 5'd12;
    localparam D_E4M3 = 5'd7, D_S64 = 5'd15, D_S32 = 5'd16, D_S16 = 5'd17, D_S8 = 5'd18,
               D_U64 = 5'd20, D_U32 = 5'd21, D_U16 = 5'd22, D_U8 = 5'd23;
    localparam FL_OF = 5'd4, FL_UF = 5'd8, FL_NX = 5'd16;

    // ------------------------------------------------------------------ DataType
    wire is_e4m3 = dtype == D_E4M3;
    wire is_signed = dtype == D_S64 || dtype == D_S32 || dtype == D_S16 || dtype == D_S8;
    wire is_int = is_signed || dtype == D_U64 || dtype == D_U32 || dtype == D_U16 || dtype == D_U8;
    wire [6:0] width = (dtype == D_S64 || dtype == D_U64) ? 7'd64 :
                       (dtype == D_S32 || dtype == D_U32) ? 7'd32 :
                       (dtype == D_S16 || dtype == D_U16) ? 7'd16 : 7'd8;
    wire [63:0] mask = (width == 7'd64) ? {64{1'b1}} : ((64'd1 << width) - 64'd1);
    wire [63:0] sign_bit = 64'd1 << (width - 7'd1);
    wire int_op = func == F_ADD || func == F_SUB || func == F_MUL || func == F_AND || func == F_OR ||
                  func == F_XOR || func == F_SHL || func == F_SHR || func == F_MAX || func == F_MIN;
    assign supported = (is_int && int_op) || (is_e4m3 && (func == F_ADD || func == F_SUB || func == F_MUL));
    assign we = pe_mask[pe];

    // ------------------------------------------------------------------ integers
    wire [63:0] ua = a & mask;
    wire [63:0] ub = b & mask;
    // sign-extended to 64 bits (signed types), zero-extended (unsigned)
    wire [63:0] sa = (is_signed && (ua & sign_bit) != 64'd0) ? (ua | ~mask) : ua;
    wire [63:0] sb = (is_signed && (ub & sign_bit) != 64'd0) ? (ub | ~mask) : ub;
    wire [5:0]  count = ub[5:0] & (width[5:0] - 6'd1);       // the low log2(W) bits of b (64: 6'd0 - 1 = 63)
    wire signed [63:0] ssa = sa;
    wire signed [63:0] ssb = sb;
    wire        a_less = is_signed ? (ssa < ssb) : (ua < ub);
    wire [63:0] shr_signed = ssa >>> count;                    // a signed operand alone: arithmetic shift
`ifdef SEEDED_BUG
    wire [63:0] shr = ua >> count;                              // SEEDED BUG: no sign fill for S* (Decision 066)
`else
    wire [63:0] shr = is_signed ? shr_signed : (ua >> count);
`endif
    reg  [63:0] int_y;
    always @* begin
        case (func)
            F_ADD:   int_y = ua + ub;
            F_SUB:   int_y = ua - ub;
            F_MUL:   int_y = ua * ub;
            F_AND:   int_y = ua & ub;
            F_OR:    int_y = ua | ub;
            F_XOR:   int_y = ua ^ ub;
            F_SHL:   int_y = ua << count;
            F_SHR:   int_y = shr;
            F_MAX:   int_y = a_less ? ub : ua;      // equal values: the first operand's
            F_MIN:   int_y = a_less ? ua : ub;
            default: int_y = 64'd0;
        endcase
    end

    // ------------------------------------------------------------------ E4M3
    // An E4M3 value is M * 2^(max(E,1) - 10) with M = 1.mmm (E > 0) or 0.mmm (E = 0) as a
    // 4-bit integer.  Sums and products are exact as integers in units of 2^-18.
    function [3:0] sig4;            // M
        input [7:0] x;
        sig4 = (x[6:3] == 4'd0) ? {1'b0, x[2:0]} : {1'b1, x[2:0]};
    endfunction
    function [4:0] scale;           // max(E,1): the unit of M is 2^(scale - 10)
        input [7:0] x;
        scale = (x[6:3] == 4'd0) ? 5'd1 : {1'b0, x[6:3]};
    endfunction
    function is_nan;
        input [7:0] x;
        is_nan = x[6:0] == 7'h7F;
    endfunction

    wire [7:0]  ea = a[7:0];
    wire [7:0]  eb = {b[7] ^ (func == F_SUB), b[6:0]};         // x - y is x + (-y)
    wire [39:0] xa = {36'd0, sig4(ea)} << (scale(ea) + 5'd8);   // M << (scale - 10 + 18)
    wire [39:0] xb = {36'd0, sig4(eb)} << (scale(eb) + 5'd8);
    wire [7:0]  sig_prod = {4'd0, sig4(ea)} * {4'd0, sig4(eb)};
    wire [39:0] prod = {32'd0, sig_prod} << (scale(ea) + scale(eb) - 6'd2);
    reg  [39:0] mag;
    reg         sgn;
    always @* begin
        if (func == F_MUL) begin
            mag = prod;
            sgn = ea[7] ^ eb[7];
        end else if (ea[7] == eb[7]) begin
            mag = xa + xb;
            sgn = ea[7];
        end else if (xa >= xb) begin
            mag = xa - xb;
            sgn = ea[7];
        end else begin
            mag = xb - xa;
            sgn = eb[7];
        end
        if (mag == 40'd0 && func != F_MUL)
            sgn = ea[7] & eb[7];                                // an exact zero sum is +0 unless both are -0
    end

    // round mag * 2^-18 to E4M3, nearest even
    reg [5:0]  lead;                // index of the leading one of mag
    reg [5:0]  shift;               // the quantum of the result's binade, in units of 2^-18
    reg [39:0] kept;
    reg        round_bit, sticky, tiny;
    reg [4:0]  m;                   // rounded significand (up to 16 before the carry)
    reg [5:0]  e;                   // biased exponent
    reg [7:0]  e4_y;
    reg [4:0]  e4_flags;
    integer i;
    always @* begin
        lead = 6'd0;
        for (i = 0; i < 40; i = i + 1)
            if (mag[i]) lead = i[5:0];
        shift = (lead > 6'd12) ? lead - 6'd3 : 6'd9;          // max(lead - 3, 9): 4 significant bits, or the subnormal quantum 2^-9
        kept = mag >> shift;
        round_bit = mag[shift - 6'd1];
        sticky = (mag & ((40'd1 << (shift - 6'd1)) - 40'd1)) != 40'd0;
        m = kept[4:0] + {4'd0, round_bit & (sticky | kept[0])};
        e = shift - 6'd8;
        if (m == 5'd16) begin
            m = 5'd8;
            e = e + 6'd1;
        end
        if (m < 5'd8)
            e = 6'd0;                                           // subnormal or zero
        // tiny: below 2^-6 after rounding to 4 significant bits with an unbounded exponent
        tiny = mag != 40'd0 && (lead < 6'd11 || (lead == 6'd11 && !(mag[11:7] == 5'b11111)));
        e4_flags = 5'd0;
        if (is_nan(ea) || is_nan(eb)) begin
            e4_y = 8'h7F;
        end else if (e > 6'd15 || (e == 6'd15 && m[2:0] == 3'd7)) begin
            e4_y = 8'h7F;                                       // overflow: E4M3 has no infinity
            e4_flags = FL_OF | FL_NX;
        end else begin
            e4_y = {sgn, e[3:0], m[2:0]};
            if (round_bit | sticky)
                e4_flags = FL_NX | (tiny ? FL_UF : 5'd0);
        end
    end

    // ------------------------------------------------------------------ PadValue, register
    wire [63:0] pad_max = is_e4m3 ? 64'h7E : (is_signed ? (mask >> 1) : mask);
    wire [63:0] pad_min = is_e4m3 ? 64'hFE : (is_signed ? sign_bit : 64'd0);
    always @(posedge clk) begin
        if (in_rect) begin
            y <= is_e4m3 ? {56'd0, e4_y} : (int_y & mask);
            flags <= is_e4m3 ? e4_flags : 5'd0;
            y_defined <= 1'b1;
        end else begin
            y <= (pad == 2'd1) ? pad_max : (pad == 2'd2) ? pad_min : 64'd0;
            flags <= 5'd0;
            y_defined <= pad != 2'd3;
        end
    end
endmodule
