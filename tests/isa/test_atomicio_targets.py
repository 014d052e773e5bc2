"""Atomic output onto targets that are not plain files: a symlink stays a symlink, a device
(/dev/null, /dev/stdout) is written in place instead of being replaced by a regular file."""
import os

from isa.atomicio import atomic_open


def test_a_symlinked_output_replaces_the_target_and_keeps_the_link(tmp_path):
    target = tmp_path / "real.bin"
    target.write_bytes(b"old")
    link = tmp_path / "link.bin"
    link.symlink_to(target)
    with atomic_open(link) as f:
        f.write(b"new")
    assert link.is_symlink() and target.read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["link.bin", "real.bin"]


def test_a_device_is_written_in_place_not_replaced():
    with atomic_open("/dev/null") as f:
        f.write(b"discarded")
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")
