import pytest

from calc import add, div


def test_add():
    assert add(2, 3) == 5


def test_add_wrong():
    result = add(2, 2)
    assert result == 5, "two and two"


def test_div_zero():
    assert div(1, 0) == 0


@pytest.mark.skip(reason="not today")
def test_skipped():
    pass


@pytest.mark.xfail(reason="known bug")
def test_known_bug():
    assert add(1, 1) == 3


class TestCalc:
    def test_method_fails(self):
        assert [1, 2, 3] == [1, 2, 4]

    def test_method_ok(self):
        assert add(0, 0) == 0


@pytest.fixture
def broken():
    raise RuntimeError("fixture exploded")


def test_uses_broken(broken):
    pass


@pytest.mark.parametrize("a,b,want", [(1, 1, 2), (2, 2, 5)])
def test_param(a, b, want):
    assert add(a, b) == want
