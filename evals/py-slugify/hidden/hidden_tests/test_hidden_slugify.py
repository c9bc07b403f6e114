import unittest

from slugify import slugify


class HiddenSlugifyTest(unittest.TestCase):
    def test_ends_stripped(self):
        self.assertEqual(slugify("  --Trio, 2026!--  "), "trio-2026")

    def test_only_symbols(self):
        self.assertEqual(slugify("?!* "), "")

    def test_non_ascii_is_a_separator(self):
        self.assertEqual(slugify("caf\u00e9 au lait"), "caf-au-lait")

    def test_empty(self):
        self.assertEqual(slugify(""), "")
