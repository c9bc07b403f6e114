import unittest

import calc


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(calc.add(2, 3), 5)

    def test_sub(self):
        self.assertEqual(calc.sub(2, 3), -1)

    def test_parse(self):
        self.assertEqual(calc.parse("6 / 4"), 1.5)
