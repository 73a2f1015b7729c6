// An index the index kind keeps built on a table: named in table.json (`indices`), by
// `turnstile table create --indices`, and in the index kind's plans and results.

export const INDEX_TYPES = ['btree', 'bitmap', 'ivf_flat', 'ivf_pq'] as const;

export interface IndexSpec {
  column: string;
  type: (typeof INDEX_TYPES)[number];
}
