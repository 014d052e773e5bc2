"""The mapping notation: every expression of the seed parses, prints back, and normalises to the
digit the seed describes; malformed text gets a located MappingError, nothing else."""
import pytest
from hypothesis import given, settings, strategies as st

from fabric.vcg.errors import MappingError
from fabric.vcg.mapping import Mapping, format_terms, parse_axes, parse_terms

AXES = parse_axes("A = 8, B = 4, C = 5, H = 5, R = 43, W = 19, X = 128")

# (expression, [(axis, stride, size, dim, padded) per term]) -- every form the seed uses
SEED_TERMS = [
    ("m![X, A / 4]", [("X", 1, 128, 128, 128), ("A", 4, 2, 2, 8)]),
    ("m![R # 48 / 8]", [("R", 8, 6, 6, 48)]),
    ("m![R # 48 / 2 % 4]", [("R", 2, 4, 4, 48)]),
    ("m![R # 48 % 2]", [("R", 1, 2, 2, 48)]),
    ("m![A % 4 # 8]", [("A", 1, 4, 8, 8)]),
    ("m![1 # 2]", [(None, 1, 1, 2, 1)]),
    ("m![1]", [(None, 1, 1, 1, 1)]),
    ("m![X # 256]", [("X", 1, 256, 256, 256)]),
    ("m![R # 48 / 8 # 8]", [("R", 8, 6, 8, 48)]),
    ("m![H # 8 / 2, C # 8 / 2]", [("H", 2, 4, 4, 8), ("C", 2, 4, 4, 8)]),
    ("m![R # 64 / 16, X, R # 64 / 4 % 2]", [("R", 16, 4, 4, 64), ("X", 1, 128, 128, 128),
                                             ("R", 4, 2, 2, 64)]),
]


@pytest.mark.parametrize("text,expected", SEED_TERMS)
def test_seed_expressions_normalise_to_their_digits(text, expected):
    terms = parse_terms(text, AXES, "Slice")
    assert [(t.axis, t.stride, t.size, t.dim, t.padded) for t in terms] == expected
    assert format_terms(terms) == text                       # the printer gives the text back
    assert parse_terms(format_terms(terms), AXES) == terms   # and it parses to the same terms


def test_the_wrapper_is_optional_and_spacing_free():
    assert parse_terms("R#48/2%4,X", AXES) == parse_terms("m![R # 48 / 2 % 4, X]", AXES)


def test_axis_declarations_in_both_spellings():
    assert parse_axes("A = 8, R = 12, X = 128") == {"A": 8, "R": 12, "X": 128}
    assert parse_axes("axes![R=43,X=64]") == {"R": 43, "X": 64}
    assert list(parse_axes("X = 1, A = 2")) == ["X", "A"]        # declaration order kept


def test_a_mapping_prints_all_three_dimensions():
    m = Mapping.parse("A = 8, R = 12, X = 128", "X, A / 4", "R # 16", "A % 4 # 8")
    assert str(m) == ("axes![A = 8, R = 12, X = 128] Slice=m![X, A / 4] Time=m![R # 16] "
                      "Packet=m![A % 4 # 8]")
    assert (m.num_slices, m.num_steps, m.packet_size) == (256, 16, 8)


# (text, where the caret must point, words the message must contain)
MALFORMED_TERMS = [
    ("X, A / 3", 5, "does not divide"),
    ("X, Q", 3, "unknown axis 'Q'"),
    ("X A", 2, "after the end"),
    ("R # 8", 2, "smaller than the size 43"),
    ("m![X", 4, "expected ']'"),
    ("A % 4 # 8 / 2", 10, "after padding its dimension"),
    ("1 / 2", 2, "cannot be split"),
    ("2", 0, "identity 1"),
    ("A / 0", 2, ">= 1"),
    ("A /", 3, "expected stride operand"),
    ("A = 2", 2, "resize"),
    ("X, , A", 3, "expected an axis name"),
    ("A $ 2", 2, "unexpected character '$'"),
    ("R # 99999999999999", 4, "too large"),
    ("m![]", 3, "at least one term"),
]


@pytest.mark.parametrize("text,col,words", MALFORMED_TERMS)
def test_malformed_expressions_point_at_the_offending_token(text, col, words):
    with pytest.raises(MappingError) as e:
        parse_terms(text, AXES, "Slice")
    assert e.value.pos == col, e.value.pretty()
    assert words in e.value.message
    caret = e.value.caret().splitlines()
    assert caret[0] == "  " + text and caret[1].index("^") == col + 2
    assert str(e.value).startswith(f"Slice column {col + 1}:")


@pytest.mark.parametrize("text,col,words", [
    ("A = 8, A = 3", 7, "declared twice"),
    ("A = 0", 4, ">= 1"),
    ("A 8", 2, "expected '='"),
    ("", 0, "at least one"),
    ("A = x", 4, "size of axis A"),
])
def test_malformed_axis_declarations(text, col, words):
    with pytest.raises(MappingError) as e:
        parse_axes(text)
    assert e.value.pos == col and words in e.value.message


def test_inconsistent_padding_and_overlapping_digits_are_located():
    with pytest.raises(MappingError, match="padded to 16 here but to 12"):
        Mapping.parse("R = 10", "R # 12 / 4", "R # 16 % 4")
    with pytest.raises(MappingError, match="overlaps") as e:
        Mapping.parse("A = 8", "A / 2", "A % 4")
    assert e.value.where in ("Slice", "Time")
    with pytest.raises(MappingError, match="a flit has 8"):
        Mapping.parse("A = 16", "", "", "A")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ABRX1248 #/%,=![]m()axes_-", max_size=24))
def test_arbitrary_text_parses_or_raises_a_located_mapping_error(text):
    try:
        parse_terms(text, AXES, "Time")
    except MappingError as e:
        assert 0 <= e.pos <= len(text)
        e.pretty()
