import { tableLayout, type TableLayout } from './layout';
import { storageAt } from './open-storage';
import type { Storage } from './storage';

// A table's files as one value: the backend serving its root and where each file lives.
// Resolved once and handed down, so the functions below a caller (sealed-through probe,
// gc floor, schema, SEALED.json hint) do not each look the root up again.

export interface TableFiles {
  /** The table's name. */
  name: string;
  storage: Storage;
  layout: TableLayout;
}

/** No I/O: the backend of `root` and the table's layout under it. */
export const tableFiles = (root: string, name: string): TableFiles => ({ name, storage: storageAt(root), layout: tableLayout(root, name) });
