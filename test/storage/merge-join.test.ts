import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { INDEX_JOIN_MAX_FRACTION, keyIndexed, mergeJoin } from '../../src/storage/merge-join';

describe('mergeJoin', () => {
  it('joins through the index only with one, and only for a batch small beside the table', () => {
    expect(mergeJoin(100, 2_000_000, true)).toBe('index');
    expect(mergeJoin(100_000, 1_000_000, true)).toBe('scan');
    expect(mergeJoin(100, 2_000_000, false)).toBe('scan');
    expect(mergeJoin(1, 0, true)).toBe('scan');
  });

  it('a batch that joins through the index still does with fewer rows or a larger table', () => {
    fc.assert(
      fc.property(fc.nat(1e7), fc.nat(1e9), fc.nat(1e7), fc.nat(1e9), (batch, table, fewer, more) => {
        if (mergeJoin(batch, table, true) !== 'index') return;
        expect(mergeJoin(Math.max(0, batch - fewer), table + more, true)).toBe('index');
      }),
    );
    fc.assert(
      fc.property(fc.nat(1e9), (table) => {
        expect(mergeJoin(Math.floor(table * INDEX_JOIN_MAX_FRACTION) + 1, table, true)).toBe('scan');
      }),
    );
  });
});

describe('keyIndexed', () => {
  it('counts a BTREE on the key column alone', () => {
    expect(keyIndexed([{ indexType: 'BTree', columns: ['id'] }], 'id')).toBe(true);
    expect(keyIndexed([{ indexType: 'Bitmap', columns: ['id'] }], 'id')).toBe(false);
    expect(keyIndexed([{ indexType: 'BTree', columns: ['value'] }], 'id')).toBe(false);
    expect(keyIndexed([{ indexType: 'BTree', columns: ['id', 'value'] }], 'id')).toBe(false);
    expect(keyIndexed([], 'id')).toBe(false);
  });
});
