"""The public element-wise API: dispatch table, DataType sets, operands, broadcasting, errors."""
import importlib

import numpy as np
import pytest

from isa import datatypes as dts
from isa import instructions as instrs
from kernels import numeric
from kernels.numeric import UnsupportedOperation

ew = importlib.import_module("kernels.numeric.elementwise")
ELEMENTWISE_OPS = sorted({op for op, _ in ew.TABLE})


def test_numeric_elementwise_is_the_function_even_after_the_module_is_imported():
    assert callable(numeric.elementwise) and numeric.elementwise is ew.elementwise
    assert numeric.supports is ew.supports


def test_supports_follows_each_instructions_datatype_set_exactly():
    for op in ELEMENTWISE_OPS:
        ins = instrs.lookup(op)
        for d in dts.DATATYPES:
            assert numeric.supports(op, d.name) == (d.name in ins.dtypes and (op, d.kind) in ew.TABLE), (op, d.name)


def test_every_instruction_datatype_pair_has_a_table_row():
    missing = [(op, d) for op in ELEMENTWISE_OPS for d in instrs.lookup(op).dtypes
               if (op, dts.datatype(d).kind) not in ew.TABLE]
    assert not missing, missing


def test_unsupported_pairs_raise_a_clear_error():
    with pytest.raises(UnsupportedOperation, match="TAND does not support DataType FP32"):
        numeric.elementwise("TAND", "FP32", np.uint32(0), np.uint32(0))
    with pytest.raises(UnsupportedOperation, match="HiF8"):
        numeric.elementwise("TADD", "HiF8", np.uint8(0), np.uint8(0))
    with pytest.raises(UnsupportedOperation, match="not an element-wise operation"):
        numeric.elementwise("TSEL", "S8", 0, 0, 0)
    with pytest.raises(UnsupportedOperation, match="use numeric.convert"):
        numeric.elementwise("TCVT", "S8", 0)
    with pytest.raises(UnsupportedOperation, match="reserved"):
        numeric.elementwise("TADD", 25, 0, 0)
    assert not numeric.supports("TFOO", "S8") and not numeric.supports("TADD", "S4X2")
    assert not numeric.supports("TADD", "S8", profile="nonexistent")


def test_operand_count_cmode_and_dtype_errors():
    with pytest.raises(TypeError, match="TADD takes 2 operand"):
        numeric.elementwise("TADD", "S8", np.uint8(1))
    with pytest.raises(TypeError, match="takes no cmode"):
        numeric.elementwise("TADD", "S8", 1, 2, cmode="EQ")
    with pytest.raises(ValueError, match="cmode"):
        numeric.elementwise("TCMP", "S8", 1, 2, cmode=6)
    with pytest.raises(TypeError, match="unsigned-integer array"):
        numeric.elementwise("TADD", "S8", np.float32(1), np.uint8(2))
    with pytest.raises(ValueError, match="raw S8 encodings"):
        numeric.elementwise("TADD", "S8", -1, 2)
    with pytest.raises(ValueError, match="raw U16 encodings"):
        numeric.elementwise("TADD", "U16", np.array([1 << 16]), 2)
    with pytest.raises(ValueError, match="do not broadcast"):
        numeric.elementwise("TADD", "S8", np.zeros(3, np.uint8), np.zeros(4, np.uint8))
    with pytest.raises(ValueError, match="unknown numeric profile"):
        numeric.elementwise("TADD", "S8", 1, 2, profile="nope")


def test_operands_broadcast_and_results_use_the_container_dtype():
    a = np.arange(6, dtype=np.uint16).reshape(2, 3)
    bits, flags = numeric.elementwise("TADD", "U32", a, np.uint8(10))
    assert bits.dtype == np.uint32 and bits.shape == (2, 3) and flags.shape == (2, 3)
    assert bits.tolist() == [[10, 11, 12], [13, 14, 15]] and flags.dtype == np.uint8
    bits, flags = numeric.elementwise("TNEG", "S64", 1)
    assert bits.shape == () and int(bits) == (1 << 64) - 1
    bits, _ = numeric.elementwise("TADD", "U64", [(1 << 64) - 1], [1])
    assert bits.tolist() == [0]


def test_cmode_accepts_names_and_field_codes_and_defaults_to_eq():
    a, b = np.array([1, 2, 3], np.uint8), np.uint8(2)
    by_code = [numeric.elementwise("TCMP", "U8", a, b, cmode=k)[0].tolist() for k in range(6)]
    by_name = [numeric.elementwise("TCMP", "U8", a, b, cmode=n)[0].tolist() for n in ew.CMODES]
    assert by_code == by_name == [[0, 1, 0], [1, 0, 1], [1, 0, 0], [0, 0, 1], [1, 1, 0], [0, 1, 1]]
    assert numeric.elementwise("TCMP", "U8", a, b)[0].tolist() == [0, 1, 0]


def test_operation_names_are_case_insensitive_and_results_do_not_alias_inputs():
    a = np.array([5], np.uint8)
    bits, _ = numeric.elementwise("tabs", "u8", a)
    bits[0] = 9
    assert a[0] == 5
