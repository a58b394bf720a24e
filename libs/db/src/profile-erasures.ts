/** A delete's erasure as recorded: only the latest of a key is kept, as it covers the earlier ones (migration 008). */
export interface RecordedErasure {
  key: string;
  t: number;
}
