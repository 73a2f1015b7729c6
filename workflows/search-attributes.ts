import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

// Search attributes the table workflow keeps current so the Temporal UI can list and
// filter tables. SQLite visibility has few slots per type (3 Int, 3 Double, 3 Bool,
// 10 Keyword); these use 2 Keyword, 1 Int, 1 Double, 2 Bool.
export const TurnstileTable = defineSearchAttributeKey('TurnstileTable', SearchAttributeType.KEYWORD);
export const TurnstileTurnHolder = defineSearchAttributeKey('TurnstileTurnHolder', SearchAttributeType.KEYWORD);
export const TurnstileBacklog = defineSearchAttributeKey('TurnstileBacklog', SearchAttributeType.INT);
export const TurnstileWritePressure = defineSearchAttributeKey('TurnstileWritePressure', SearchAttributeType.DOUBLE);
export const TurnstileStalled = defineSearchAttributeKey('TurnstileStalled', SearchAttributeType.BOOL);
export const TurnstilePaused = defineSearchAttributeKey('TurnstilePaused', SearchAttributeType.BOOL);

/** For `temporal server start-dev --search-attribute Name=Type`. */
export const SEARCH_ATTRIBUTE_FLAGS: string[] = [
  'TurnstileTable=Keyword',
  'TurnstileTurnHolder=Keyword',
  'TurnstileBacklog=Int',
  'TurnstileWritePressure=Double',
  'TurnstileStalled=Bool',
  'TurnstilePaused=Bool',
];
