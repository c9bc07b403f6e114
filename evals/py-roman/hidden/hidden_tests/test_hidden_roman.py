import unittest

from roman import from_roman, to_roman


class HiddenRomanTest(unittest.TestCase):
    def test_bounds(self):
        self.assertEqual(to_roman(3999), "MMMCMXCIX")
        with self.assertRaises(ValueError):
            to_roman(4000)

    def test_malformed(self):
        for s in ["", "IIII", "VX", "IC", "MMMM", "abc"]:
            with self.assertRaises(ValueError, msg=s):
                from_roman(s)
