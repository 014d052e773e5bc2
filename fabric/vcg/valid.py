"""valid_size(s, t) for every flit at once: NumPy over all slices and time steps.

Each time filter is separable: its slice classification depends on s only, its time test on t
only, so a filter costs one length-S and one length-T pass plus one S x T broadcast.
"""
from __future__ import annotations

import numpy as np

from .config import PacketClipperConfig, TimeFilterConfig, TimeFilterMode, VcgConfig

LESS, EQUAL, GREATER = -1, 0, 1
MAX_MATRIX_CELLS = 1 << 28      # 256 Mi flits (256 MiB of uint8): refuse bigger matrices


def slice_classes(tf: TimeFilterConfig, num_slices: int) -> np.ndarray:
    """int8[S]: LESS / EQUAL / GREATER of (s & slice_mask) against slice_thres."""
    m = np.arange(num_slices, dtype=np.uint64) & np.uint64(tf.slice_mask)
    return np.sign(m.astype(np.int64) - tf.slice_thres).astype(np.int8)


def time_open(tf: TimeFilterConfig, num_steps: int) -> np.ndarray:
    """bool[T]: idx(t) < time_thres, the test applied to boundary (and TimeMajor above) slices."""
    return tf.sequencer.index(np.arange(num_steps, dtype=np.int64)) < tf.time_thres


def filter_matrix(tf: TimeFilterConfig, num_slices: int, num_steps: int) -> np.ndarray:
    """bool[S, T]: TimeFilterConfig::valid for every flit."""
    cls = slice_classes(tf, num_slices)[:, None]
    opened = time_open(tf, num_steps)[None, :]
    if tf.mode is TimeFilterMode.SliceMajor:
        return (cls == LESS) | ((cls == EQUAL) & opened)
    return (cls == LESS) | opened


def clipper_sizes(pc: PacketClipperConfig, num_steps: int) -> np.ndarray:
    """int64[T]: PacketClipperConfig::valid_size for every time step."""
    idx = pc.sequencer.index(np.arange(num_steps, dtype=np.int64))
    return np.clip(pc.axis_size - idx, 0, pc.packet_span)


def valid_size_matrix(cfg: VcgConfig, num_slices: int, num_steps: int) -> np.ndarray:
    """uint8[S, T]: VcgConfig::valid_size(s, t) for s < num_slices, t < num_steps."""
    if num_slices * num_steps > MAX_MATRIX_CELLS:
        raise ValueError(f"valid_size matrix of {num_slices} x {num_steps} flits exceeds "
                         f"{MAX_MATRIX_CELLS} cells")
    ok = np.ones((num_slices, num_steps), dtype=bool)
    for tf in cfg.time_filters:
        if tf.slice_mask == 0 and tf.slice_thres > 0:
            continue                       # s & 0 = 0 < slice_thres: always the Less arm
        ok &= filter_matrix(tf, num_slices, num_steps)
    sizes = clipper_sizes(cfg.packet_clipper, num_steps).astype(np.uint8)
    return np.where(ok, sizes[None, :], np.uint8(0))
