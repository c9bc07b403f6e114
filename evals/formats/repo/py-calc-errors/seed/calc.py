"""A tiny calculator library."""


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def div(a, b):
    return a / b


def parse(expr):
    """Evaluate "A op B" with op one of + - /."""
    a, op, b = expr.split()
    ops = {"+": add, "-": sub, "/": div}
    return ops[op](float(a), float(b))
