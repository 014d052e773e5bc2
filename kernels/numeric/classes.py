"""Value classes of a decoded encoding (formats.unpack's first result, int8).

The bottom of kernels.numeric: the codecs (formats.py, hif8.py) and every operation name a
value's class by these codes.
"""
ZERO, FINITE, INF, QNAN, SNAN = 0, 1, 2, 3, 4
CLASS_NAMES = {ZERO: "ZERO", FINITE: "FINITE", INF: "INF", QNAN: "QNAN", SNAN: "SNAN"}
