// alu.v with one seeded bug (TSHR of a signed type shifts in zeros), for examples/rtl/run.py --dut alu_bug:
// the same source with SEEDED_BUG defined, so the two DUTs differ in exactly that line.
`define SEEDED_BUG
`include "alu.v"
