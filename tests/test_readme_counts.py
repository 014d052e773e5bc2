"""The README's counts are the tables' counts: "the 28 tile instructions" is the instruction table's
length, "25 DataTypes" the DataType table's, "3 named, versioned numeric profiles (ieee, ftz, a5)"
the profile table's names, and the tour's `--profile` choices list every profile."""
import pathlib
import re

from isa.datatypes import DATATYPES
from isa.instructions import INSTRUCTIONS
from kernels.numeric.profiles import PROFILES

README = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
TEXT = " ".join(README.split())          # sentences wrap across lines


def test_the_instruction_count_is_the_instruction_tables():
    assert re.search(r"\bthe (\d+) tile instructions\b", TEXT).group(1) == str(len(INSTRUCTIONS))


def test_the_datatype_count_is_the_datatype_tables():
    assert re.search(r"\bthe (\d+) DataTypes\b", TEXT).group(1) == str(len(DATATYPES))


def test_the_profile_count_and_names_are_the_profile_tables():
    found = re.search(r"\b(\d+) named, versioned numeric profiles \(([^)]*)\)", TEXT)
    assert found.group(1) == str(len(PROFILES))
    assert [n.strip() for n in found.group(2).split(",")] == list(PROFILES)


def test_every_profile_choice_the_tour_shows_is_a_profile_and_none_is_missing():
    for choices in re.findall(r"--profile ([a-z0-9|]+)", README):
        if "|" in choices:
            assert choices.split("|") == list(PROFILES)
