"""Regenerate the example flit files for `tile-emu reduce` (docs/vcg.md).

    python examples/vcg/make_input.py                     # writes hcw_input.arrow, time_packet_input.arrow
    python examples/vcg/make_input.py --out-dir /tmp/x    # somewhere else

Each file lays a logical tensor out as the mapping says: element value = a fixed function of its
axis coordinates; every position that is padding of any axis holds an adversarial value
(INT_MIN / INT_MAX, or NaN / +-inf for floats) that a correct reduction never reads.  The
valid_size column is the VCG tag of each flit.
"""
from __future__ import annotations

import argparse
import pathlib

import numpy as np

from fabric.vcg.arrow_io import input_table, write_table
from fabric.vcg.mapping import Mapping, dim_digits
from fabric.vcg.spec import load_spec
from fabric.vcg.valid import valid_size_matrix

HERE = pathlib.Path(__file__).resolve().parent
EXAMPLES = [("hcw.json", "hcw_input.arrow", "int32"), ("time_packet.json", "time_packet_input.arrow", "float32")]


def element_coords(m: Mapping):
    """Per axis: its index at every (slice, time, lane) and whether that element is real."""
    s = np.arange(m.num_slices)[:, None, None]
    t = np.arange(m.num_steps)[None, :, None]
    q = np.arange(8)[None, None, :]
    shape = (m.num_slices, m.num_steps, 8)
    real = np.broadcast_to(q < m.packet_size, shape).copy()
    index = {a: np.zeros(shape, np.int64) for a in m.axis_sizes}
    for terms, x in ((m.slice, s), (m.time, t), (m.packet, q)):
        for term, d in zip(terms, dim_digits(terms, x)):
            real &= d < term.size
            if term.axis is not None:
                index[term.axis] = index[term.axis] + d * term.stride
    for a, n in m.axis_sizes.items():
        real &= index[a] < n
    return index, real


def make(spec_path: pathlib.Path, dtype: str, seed: int = 2024):
    spec = load_spec(spec_path)
    m = spec.mapping
    index, real = element_coords(m)
    # logical value: a small hash of the coordinates (exact in every supported type)
    value = sum((index[a] + 1) * (7 ** i) for i, a in enumerate(m.axis_sizes)) % 97 - 48
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    if dt.kind == "f":
        junk = rng.choice(np.array([np.nan, np.inf, -np.inf], dt), size=real.shape)
        x8 = np.where(real, (value / 4).astype(dt), junk)
    else:
        info = np.iinfo(dt)
        junk = rng.choice(np.array([info.min, info.max], dt), size=real.shape)
        x8 = np.where(real, value.astype(dt), junk)
    vs = valid_size_matrix(spec.compile(), m.num_slices, m.num_steps)
    return input_table(x8.reshape(-1, 8), vs.reshape(-1), {"mapping": spec.to_dict()})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", default=str(HERE))
    args = ap.parse_args(argv)
    out = pathlib.Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for spec, name, dtype in EXAMPLES:
        write_table(out / name, make(HERE / spec, dtype))
        print(f"wrote {out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
