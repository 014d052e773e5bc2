// What the golden flow can observe of the lane (examples/rtl/alu.v), as assertions over two
// copies: `gold` (the lane) and `gate` (a mutant).  examples/rtl/mutate.py proves each surviving
// mutant against it with Yosys's SAT solver (sat -prove-asserts, two clock steps): a mutant that
// satisfies every assertion is equivalent for the flow -- no golden case can kill it.
//
// The bench (tb_alu.py) asks `supported` of each dataset partition's (func, dtype) and `we` of
// every PE under each case's PE_MASK; it drives only supported pairs, with operands in the DataType's low W bits, and reads the low
// W bits of y where y_defined is 1 (the container width: 8 for E4M3) and flags where the element
// is inside ValidRow x ValidCol.  The comparison is per element, which is stronger than the
// bench's (the tile's status is the OR of its elements' flags).  `supported` and `we` are
// compared for every input, beyond what the bench drives.
module alu_equiv(input clk, input [4:0] func, input [4:0] dtype, input in_rect, input [1:0] pad,
             input [63:0] a, input [63:0] b, input [1:0] pe, input [3:0] pe_mask);
    wire we_g, we_m, sup_g, sup_m, yd_g, yd_m;
    wire [63:0] y_g, y_m;
    wire [4:0] f_g, f_m;
    gold g(.clk(clk), .func(func), .dtype(dtype), .in_rect(in_rect), .pad(pad), .a(a), .b(b), .pe(pe),
           .pe_mask(pe_mask), .we(we_g), .y(y_g), .y_defined(yd_g), .flags(f_g), .supported(sup_g));
    gate m(.clk(clk), .func(func), .dtype(dtype), .in_rect(in_rect), .pad(pad), .a(a), .b(b), .pe(pe),
           .pe_mask(pe_mask), .we(we_m), .y(y_m), .y_defined(yd_m), .flags(f_m), .supported(sup_m));
    // the element's container width: the bench reads the low W bits of a, b and y
    wire [6:0] w = (dtype == 5'd15 || dtype == 5'd20) ? 7'd64 : (dtype == 5'd16 || dtype == 5'd21) ? 7'd32 :
                   (dtype == 5'd17 || dtype == 5'd22) ? 7'd16 : 7'd8;
    wire [63:0] mask = (w == 7'd64) ? {64{1'b1}} : ((64'd1 << w) - 64'd1);
    // a supported pair with operands in range (what the bench drives): its outputs must agree
    wire ok = sup_g && (a & ~mask) == 64'd0 && (b & ~mask) == 64'd0;
    reg [63:0] mask_q;
    reg in_rect_q, ok_q;
    always @(posedge clk) begin
        mask_q <= mask;
        in_rect_q <= in_rect;
        ok_q <= ok;
    end
    always @* begin
        assert(sup_m == sup_g);                          // every (func, dtype): what the lane claims
        assert(we_m == we_g);                            // every PE and PE_MASK
        if (ok_q) begin
            assert(yd_m == yd_g);
            if (yd_g) assert((y_m & mask_q) == (y_g & mask_q));
            if (in_rect_q) assert(f_m == f_g);
        end
    end
endmodule
