// machine.v with one seeded bug (a PE_MASK bug: a commit releases the old tile under the
// destination id on every PE, not only the selected ones), for examples/rtl/run_machine.py --dut machine_bug.
`define SEEDED_BUG
`include "machine.v"
