"""A small stock list."""


class Inventory:
    def __init__(self):
        self.items = {}  # name -> [qty, price]

    def add(self, name, qty, price):
        item = self.items.setdefault(name, [0, price])
        item[0] += qty
        item[1] = price

    def remove(self, name, qty):
        self.items[name][0] -= qty

    def qty(self, name):
        return self.items.get(name, [0, 0])[0]
