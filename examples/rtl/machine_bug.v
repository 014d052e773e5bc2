// machine.v with one seeded bug, for examples/rtl/run_machine.py --dut machine_bug: a PE_MASK
// bug -- each selected PE reads its sources from the slots where the lowest selected PE holds
// them, which is right only while earlier blocks' PE_MASKs kept every PE's tile store alike.
// The same source with SEEDED_BUG defined, so the two DUTs differ in exactly that line.
`define SEEDED_BUG
`include "machine.v"
