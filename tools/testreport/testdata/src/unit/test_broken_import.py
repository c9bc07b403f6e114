import unittest

from calc import multiply


class MulTest(unittest.TestCase):
    def test_mul(self):
        self.assertEqual(multiply(2, 3), 6)
