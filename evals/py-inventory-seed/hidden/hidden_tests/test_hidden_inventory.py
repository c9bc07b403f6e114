import unittest

from inventory import Inventory


class HiddenInventoryTest(unittest.TestCase):
    def test_remove_too_many(self):
        inv = Inventory()
        inv.add("pen", 2, 1)
        with self.assertRaises(ValueError):
            inv.remove("pen", 3)
        self.assertEqual(inv.qty("pen"), 2)

    def test_add_kept(self):
        inv = Inventory()
        inv.add("pen", 2, 1)
        inv.add("pen", 1, 3)
        self.assertEqual((inv.qty("pen"), inv.total_value()), (3, 9))
