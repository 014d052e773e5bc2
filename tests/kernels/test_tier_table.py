"""The table of tiers in docs/numerics.md is the tier table's, and every floating operation has a
compiled kernel, a table or array code on the host and on the device.

docs/numerics.md ("Implementation and speed") shows, per profile, which tier computes each
(operation, DataType); the test regenerates it (kernels/numeric/tiertable.py) and compares, so an
operation added without a compiled kernel -- which would run on the NumPy reference, with no
device path -- is reported here, not discovered by its speed."""
from pathlib import Path

import pytest

from isa import instructions
from isa.datatypes import datatype
from kernels.numeric import fast, tiers, tiertable
from kernels.numeric.profiles import PROFILES, profile

DOC = Path(__file__).resolve().parents[2] / "docs" / "numerics.md"


def test_the_documented_tier_table_is_the_generated_one():
    doc = DOC.read_text(encoding="utf-8")
    assert tiertable.TABLE_BEGIN in doc and tiertable.TABLE_END in doc
    assert tiertable.with_tier_table(doc) == doc, (
        "docs/numerics.md's tier table is stale: run `python -m kernels.numeric.tiertable --write docs/numerics.md`")


def test_the_table_names_every_floating_operation_and_datatype():
    text = tiertable.tier_table()
    for r in instructions.INSTRUCTIONS:
        floating = [d for d in r.dtypes if datatype(d).is_float]
        if r.mnemonic in tiers.FLOAT_REFERENCE:
            assert f"| {r.mnemonic} |" in text
            assert all(f" {d} |" in text.splitlines()[2] for d in floating)
    assert text.count("Profile `") == len(PROFILES)


def test_every_registered_kernel_belongs_to_a_compiled_tier_of_the_table():
    compiled = {t.name for t in tiers.TIERS if t.kind == "kernels"}
    assert set(fast.REGISTRY) <= compiled, "a kernel registered under a tier the table lacks never runs"
    assert all(fast.REGISTRY.get(name) for name in compiled), "a compiled tier with no kernels"


def test_each_kernel_has_its_instructions_arity_and_datatype():
    for tier, rows in fast.REGISTRY.items():
        for (name, op), k in rows.items():
            ins = instructions.lookup(op)
            assert k.arity == ins.arity and name in ins.dtypes, (tier, name, op)


@pytest.mark.parametrize("name", list(PROFILES))
def test_no_floating_operation_is_left_to_the_reference_or_to_the_host(name):
    prof = profile(name)
    slow = []
    for r, d in tiertable.floating_cases():
        cell = tiertable.cell(r.mnemonic, d, prof, r.arity)
        if "reference" in cell or "host" in cell or cell == "-":
            slow.append(f"{r.mnemonic} {d.name}: {cell}")
    assert not slow, f"profile {name}: no compiled kernel, table or array code for " + ", ".join(slow)
