const test = require('node:test');
const assert = require('node:assert');

const add = (a, b) => a + b;

test('adds', () => {
  assert.strictEqual(add(2, 3), 5);
});

test('adds wrong', () => {
  assert.strictEqual(add(2, 2), 5);
});

test('throws', () => {
  null.foo();
});

test('skipped', { skip: 'not today' }, () => {});

test('group', async (t) => {
  await t.test('inner ok', () => {});
  await t.test('inner bad', () => {
    assert.deepStrictEqual([1, 2], [1, 3]);
  });
});
