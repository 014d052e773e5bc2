"""Regenerate the examples' initial states: `python examples/make_inits.py` (writes *.init.arrow
next to this file).  Values are written as raw encodings; float inputs are exactly representable."""
from __future__ import annotations

import pathlib

import numpy as np

from emulator import FeatureMap, Machine

HERE = pathlib.Path(__file__).resolve().parent


def f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def f16(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float16).view(np.uint16)


def saxpy() -> Machine:
    m = Machine()
    i = np.arange(64).reshape(4, 16)
    for p in range(4):
        m.write_tile(p, 1, "FP32", f32(np.full((4, 16), 2.0 + p)))        # a
        m.write_tile(p, 2, "FP32", f32(i * 0.25))                         # x
        m.write_tile(p, 3, "FP32", f32(np.full((4, 16), 1.0) - i / 64))   # y
    return m


def absdiff() -> Machine:
    m = Machine()
    rng = np.random.default_rng(1)
    for p in range(2):
        a = rng.integers(-1000, 1000, (4, 8)).astype(np.int32).view(np.uint32)
        b = rng.integers(-1000, 1000, (4, 8)).astype(np.int32).view(np.uint32)
        m.write_tile(p, 1, "S32", a, valid_col=6)
        m.write_tile(p, 2, "S32", b, valid_col=6)
    return m


def window() -> Machine:
    m = Machine()
    img = np.arange(256, dtype=np.uint64).reshape(16, 16)
    for p in range(4):
        m.write_tile(p, 1, "U8", img)
        m.set_gpr(p, 1, 3 * p)          # row offset
        m.set_gpr(p, 2, 12 - 2 * p)     # column offset
    return m


def img2col() -> Machine:
    m = Machine()
    fm = FeatureMap("NC1HWC0", N=1, C1=1, H=6, W=6, C0=16, filterH=3, filterW=3, strideH=1, strideW=1,
                    dilationH=1, dilationW=1, padLeft=1, padRight=1, padTop=1, padBottom=1, channels=12,
                    pad_bits=int(f16(0.0)))
    vals = f16((np.arange(36 * 16) % 97) / 8.0).reshape(36, 16)
    m.write_tile(0, 1, "FP16", vals, location="Matrix", fmap=fm)
    m.set_gpr(0, 1, 0)
    m.set_gpr(0, 2, 16)
    return m


def saxpy_batch() -> list[Machine]:
    """16 saxpy machines with different a, x and y; machine 5 has one undefined y element, so the
    batch example shows one machine stopping (SOURCE_UNDEFINED) while the others run on."""
    rng = np.random.default_rng(9)
    machines = []
    for k in range(16):
        m = Machine()
        for p in range(4):
            m.write_tile(p, 1, "FP32", f32(np.full((4, 16), rng.integers(-8, 9) / 4)))
            m.write_tile(p, 2, "FP32", f32(rng.integers(-512, 512, (4, 16)) / 64))
            defined = np.ones((4, 16), bool)
            if k == 5 and p == 2:
                defined[1, 7] = False
            m.write_tile(p, 3, "FP32", f32(rng.integers(-512, 512, (4, 16)) / 64), defined=defined)
        machines.append(m)
    return machines


INITS = {"saxpy": saxpy, "absdiff": absdiff, "window": window, "img2col": img2col}


def main() -> None:
    from emulator.batchio import save_machines
    for name, build in INITS.items():
        path = HERE / f"{name}.init.arrow"
        build().save(path)
        print(f"wrote {path.relative_to(HERE.parent)}")
    path = HERE / "saxpy.batch.arrow"
    save_machines(saxpy_batch(), path)
    print(f"wrote {path.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
