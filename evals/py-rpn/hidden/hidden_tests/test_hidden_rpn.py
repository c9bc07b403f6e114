import unittest

from rpn import evaluate


class HiddenRpnTest(unittest.TestCase):
    def test_order_of_operands(self):
        self.assertEqual(evaluate("10 4 -"), 6)
        self.assertEqual(evaluate("8 2 /"), 4)

    def test_errors(self):
        for expr in ["1 +", "1 2", "1 x +", ""]:
            with self.assertRaises(ValueError, msg=expr):
                evaluate(expr)
