"""Golden datasets under a numeric profile (docs/golden-format.md, docs/numerics.md "Profile ftz"):
every case is generated and replayed under the profile its manifest names.  The expected sums
are checked against a model built here from exact rationals and integer bit fields, not against
the emulator's kernels."""
from __future__ import annotations

import json
import pathlib
import shutil
from fractions import Fraction

import numpy as np
import pyarrow.parquet as pq
import pytest

from emulator.cli import main
from kernels.numeric.profiles import PROFILES

FORMATS = {"FP32": (8, 23, "<u4"), "FP16": (5, 10, "<u2")}      # exponent bits, fraction bits


class Binary:
    """An IEEE binary format as integer fields: value of an encoding, correct rounding (RNE)."""

    def __init__(self, ebits: int, mbits: int):
        self.e, self.m = ebits, mbits
        self.bias = (1 << (ebits - 1)) - 1
        self.sign = 1 << (ebits + mbits)
        self.emax_field = (1 << ebits) - 1

    def fields(self, bits: int):
        return bits & self.sign, (bits >> self.m) & self.emax_field, bits & ((1 << self.m) - 1)

    def finite(self, bits: int) -> bool:
        return self.fields(bits)[1] != self.emax_field

    def subnormal(self, bits: int) -> bool:
        _, e, f = self.fields(bits)
        return e == 0 and f != 0

    def value(self, bits: int) -> Fraction:
        s, e, f = self.fields(bits)
        v = Fraction(f, 1 << self.m) * Fraction(2) ** (1 - self.bias) if e == 0 else \
            (1 + Fraction(f, 1 << self.m)) * Fraction(2) ** (e - self.bias)
        return -v if s else v

    def round(self, x: Fraction, negative_zero: bool) -> int:
        """The encoding of x rounded to nearest, ties to even (overflow to infinity)."""
        if x == 0:
            return self.sign if negative_zero else 0
        s, a, emin = (self.sign if x < 0 else 0), abs(x), 1 - self.bias
        e = a.numerator.bit_length() - a.denominator.bit_length()     # 2^e <= a < 2^(e+1)
        if Fraction(2) ** e > a:
            e -= 1
        e = max(e, emin)
        ulp = Fraction(2) ** (e - self.m)
        q, r = divmod(a, ulp)
        q = int(q) + (r > ulp / 2 or (r == ulp / 2 and int(q) % 2 == 1))
        if q < 1 << self.m:                                            # subnormal or zero
            return s | q
        if q == 1 << (self.m + 1):                                     # rounded up a binade
            q, e = q >> 1, e + 1
        if e + self.bias >= self.emax_field:
            return s | (self.emax_field << self.m)
        return s | ((e + self.bias) << self.m) | (q - (1 << self.m))

    def add(self, a: int, b: int, ftz: bool) -> int:
        """TADD of two finite encodings: profile ieee, or ftz (a subnormal operand reads as the
        zero of its sign; a subnormal result becomes the zero of its sign)."""
        if ftz:
            a, b = (x & self.sign if self.subnormal(x) else x for x in (a, b))
        exact = self.value(a) + self.value(b)
        r = self.round(exact, negative_zero=bool(a & self.sign and b & self.sign))
        if ftz and self.subnormal(r):
            r &= self.sign
        return r


def generate(out, dtype, profile, cases=300):
    assert main(["golden", "--ops", "TADD", "--dtypes", dtype, "--cases", str(cases), "--seed", "11",
                 "--profile", profile, "--quiet", "--out", str(out)]) == 0


@pytest.fixture(scope="module", params=sorted(FORMATS))
def pair(request, tmp_path_factory):
    dtype = request.param
    root = tmp_path_factory.mktemp(f"profiles-{dtype}")
    for profile in ("ieee", "ftz"):
        generate(root / profile, dtype, profile)
    return dtype, root


def _elements(folder: pathlib.Path, dtype: str):
    """{(case, pe, row, col): (a, b, sum)} of every committed case's valid elements."""
    raw = FORMATS[dtype][2]
    t = pq.read_table(folder / f"op=TADD/dtype={dtype}/part-00000.parquet").to_pylist()
    out = {}
    for r in t:
        if r["outcome"] != "commit":
            continue
        for o in r["outputs"]:
            a, b = (next(x for x in r["inputs"] if x["pe"] == o["pe"] and x["tile"] == k) for k in (1, 2))
            arrays = [np.frombuffer(x["payload"], raw).reshape(x["Row"], x["Col"]) for x in (a, b, o)]
            for i in range(o["ValidRow"]):
                for j in range(o["ValidCol"]):
                    out[(r["case"], o["pe"], i, j)] = tuple(int(x[i][j]) for x in arrays)
    return out


def test_ieee_and_ftz_datasets_differ_exactly_where_the_models_do(pair):
    """Both datasets hold the same inputs; each holds its own profile's sums, and they differ
    where a subnormal operand or result makes the two models differ (and nowhere else)."""
    dtype, root = pair
    fmt = Binary(*FORMATS[dtype][:2])
    ieee, ftz = _elements(root / "ieee", dtype), _elements(root / "ftz", dtype)
    assert ieee.keys() == ftz.keys() and len(ieee) > 1000
    differ = subnormal_cases = 0
    for key, (a, b, got_ieee) in ieee.items():
        a2, b2, got_ftz = ftz[key]
        assert (a2, b2) == (a, b), key                          # the inputs do not depend on the profile
        if not (fmt.finite(a) and fmt.finite(b)):
            assert got_ftz == got_ieee, key                     # inf/NaN operands: no subnormal in play
            continue
        want_ieee, want_ftz = fmt.add(a, b, ftz=False), fmt.add(a, b, ftz=True)
        assert got_ieee == want_ieee, (key, hex(a), hex(b))
        assert got_ftz == want_ftz, (key, hex(a), hex(b))
        touched = fmt.subnormal(a) or fmt.subnormal(b) or fmt.subnormal(want_ieee)
        subnormal_cases += touched
        if want_ieee != want_ftz:
            assert touched, (key, hex(a), hex(b))
            differ += 1
    assert differ > 50 and subnormal_cases > 100


def test_the_data_files_of_the_two_profiles_differ_and_each_verifies(pair, capsys):
    dtype, root = pair
    part = f"op=TADD/dtype={dtype}/part-00000.parquet"
    assert (root / "ieee" / part).read_bytes() != (root / "ftz" / part).read_bytes()
    for profile in ("ieee", "ftz"):
        m = json.loads((root / profile / "manifest.json").read_text())
        assert m["profile"] == {"name": profile, "version": PROFILES[profile].version}
        assert main(["verify", str(root / profile), "--quiet"]) == 0
        assert f"profile {profile} {PROFILES[profile].version}" in capsys.readouterr().out


def _relabel(src: pathlib.Path, dst: pathlib.Path, name: str, version: str | None = None):
    shutil.copytree(src, dst)
    m = json.loads((dst / "manifest.json").read_text())
    m["profile"] = {"name": name, "version": version or PROFILES[name].version}
    m["generator"]["profile"] = name
    (dst / "manifest.json").write_text(json.dumps(m))
    (dst / "generation.json").write_text(json.dumps(m["generator"]))


@pytest.mark.parametrize("data, claimed", [("ftz", "ieee"), ("ieee", "ftz")])
def test_a_dataset_replayed_under_the_other_profile_mismatches(pair, tmp_path, capsys, data, claimed):
    """The replay runs under the profile the manifest records: ftz data labelled ieee (or the
    reverse) is a mismatch naming a case, not a pass."""
    dtype, root = pair
    _relabel(root / data, tmp_path / "x", claimed)
    assert main(["verify", str(tmp_path / "x"), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH" in out and "outputs.payload" in out


@pytest.mark.parametrize("name, version, words", [
    ("a9", "1.0", "unknown numeric profile 'a9'; profiles: " + ", ".join(PROFILES)),
    ("ftz", "0.9", f"profile ftz version '0.9'; this tile-emu has version {PROFILES['ftz'].version}"),
])
def test_an_unknown_profile_or_version_is_one_line(pair, tmp_path, capsys, name, version, words):
    dtype, root = pair
    _relabel(root / "ftz", tmp_path / "x", name, version)
    for argv in (["verify", str(tmp_path / "x")], ["golden", "--coverage", str(tmp_path / "x")]):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert words in err and err.count("\n") == 1, err


def test_the_oracle_checks_ieee_data_and_claims_no_reference_under_ftz(pair, capsys):
    """verify --oracle's references are IEEE 754's: an ieee dataset is checked against them,
    an ftz one is not compared with them (its flushed sums would read as mismatches) but listed
    as having no independent reference; the model above is this profile's check."""
    dtype, root = pair
    assert main(["verify", str(root / "ieee"), "--oracle", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "softfloat:" in out and "no independent reference: none" in out
    assert main(["verify", str(root / "ftz"), "--oracle", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "softfloat:" not in out and f"no independent reference: TADD ({dtype})" in out


def test_a_hex_export_of_either_profile_is_written_and_checks(pair, tmp_path, capsys):
    dtype, root = pair
    for profile in ("ieee", "ftz"):
        out = tmp_path / profile
        assert main(["golden", "export", str(root / profile), "--format", "hex", "--out", str(out)]) == 0
        assert json.loads((out / "manifest.json").read_text())["dataset"]["profile"]["name"] == profile
        assert main(["verify", str(out)]) == 0
    assert "hex export intact" in capsys.readouterr().out
