"""One compiled body per dtype set (issue 32 target 5): a loop wrapped in fast.Uniform compiles
the arrays it only reads as read-only, so a read-only operand (a view of Arrow or bytes) and a
writable one run the same body, and the results are those of the plain function."""
from __future__ import annotations

import numba as nb
import numpy as np

from kernels.numeric import fast


def _add_one(a, b, out):
    for i in range(a.shape[0]):
        out[i] = a[i] + b[i] + 1


def test_read_only_and_writable_operands_share_one_body():
    f = fast.Uniform(nb.njit(_add_one), fast.reads_all_but(1))
    a = np.arange(8, dtype=np.uint32)
    ro = a.copy()
    ro.flags.writeable = False
    for x, y in ((a, a), (ro, ro), (a, ro), (ro, a)):
        out = np.empty(8, np.uint32)
        f(x, y, out)
        assert out.tolist() == [2 * i + 1 for i in range(8)]
    assert len(f.signatures) == 1
    sig = f.signatures[0]
    assert sig[0].mutable is False and sig[1].mutable is False and sig[2].mutable is True


def test_another_dtype_set_gets_a_body_of_its_own():
    f = fast.Uniform(nb.njit(_add_one), fast.reads_all_but(1))
    for dtype in (np.uint16, np.uint32, np.uint16):
        a = np.arange(4, dtype=dtype)
        out = np.empty(4, dtype)
        f(a, a, out)
        assert out.tolist() == [1, 3, 5, 7]
    assert len(f.signatures) == 2


def test_a_twin_with_outputs_compiles_its_inputs_read_only():
    tw = fast.Twin(_add_one, outputs=1)
    a = np.arange(4, dtype=np.uint8)
    ro = a.copy()
    ro.flags.writeable = False
    out = np.empty(4, np.uint8)
    tw(a, ro, out)
    tw(ro, a, out)
    assert out.tolist() == [1, 3, 5, 7]
    assert len(tw.serial.signatures) == 1


def test_a_call_that_two_bodies_fit_equally_gets_its_exact_body():
    """A read-only C-layout body and a read-only any-layout body both take a writable C operand
    by conversion: the call compiles its exact types rather than failing as ambiguous."""
    f = fast.Uniform(nb.njit(_add_one), fast.reads_all_but(1))
    a = np.arange(8, dtype=np.int64)
    out = np.empty(4, np.int64)
    ro = a[:4].copy()
    ro.flags.writeable = False
    f(ro, ro, out)                          # C, read-only
    strided = a[::2]
    strided.flags.writeable = False
    f(strided, strided, out)                # A, read-only
    f(a[:4], a[:4], out)                    # C, writable: both bodies fit
    assert out.tolist() == [1, 3, 5, 7]
