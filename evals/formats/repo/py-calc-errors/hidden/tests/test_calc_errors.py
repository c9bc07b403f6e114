import unittest

import calc


class CalcErrorTest(unittest.TestCase):
    def test_div_by_zero(self):
        with self.assertRaises(calc.CalcError) as cm:
            calc.div(1, 0)
        self.assertIn("division by zero", str(cm.exception))

    def test_unknown_operator(self):
        with self.assertRaises(calc.CalcError):
            calc.parse("2 * 3")

    def test_malformed(self):
        for expr in ["", "1 +", "a + 1", "1 + 2 + 3"]:
            with self.assertRaises(calc.CalcError, msg=expr):
                calc.parse(expr)

    def test_error_is_value_error(self):
        self.assertTrue(issubclass(calc.CalcError, ValueError))
