import postgres from "postgres";
import { parsePostgresTimestamp, postgresTimestampText } from "./timestamps";

export type Sql = postgres.Sql;
/** What a repository function runs on: the pool or an open transaction. */
export type Db = postgres.Sql | postgres.TransactionSql;
export type Transaction = postgres.TransactionSql;

export interface ConnectOptions {
  /** Pool size; a worker wants a few connections per concurrent batch, the ctl only one. */
  max?: number;
  applicationName?: string;
  /**
   * How long to wait before connecting again after a failed connection, by the number of
   * failures in a row; postgres.js's default grows to 20 s. A worker paces it as it paces the
   * retries of its jobs, so that what it tries during an outage is one clock.
   */
  reconnectDelayMs?: (failures: number) => number;
}

/** postgres.js reads `max_pipeline` (src/connection.js) although its types do not list it. */
interface PoolOptions extends postgres.Options<Record<string, postgres.PostgresType>> {
  max_pipeline: number;
}

const TIMESTAMP = 1114;
const TIMESTAMPTZ = 1184;

export function connect(databaseUrl: string, options: ConnectOptions = {}): Sql {
  const { reconnectDelayMs } = options;
  const poolOptions: PoolOptions = {
    max: options.max ?? 10,
    onnotice: () => {},
    connect_timeout: 5,
    // One statement in flight per connection; more wait in the pool's own queue. When every
    // connection is busy, postgres.js 3.4.9 otherwise pipelines onto busy ones, and its queue
    // of busy connections then grows by a hole per query that every later move scans: with 100
    // concurrent callers on 10 connections, throughput fell from 35,000 to 10,000 queries/s
    // within 20 s. With this, it stays at about 43,000/s.
    max_pipeline: 1,
    connection: { application_name: options.applicationName ?? "cm" },
    // Every time the API takes (years 0001 to 9999) read back as it was written, whatever the
    // session's time zone: postgres.js's own reading and writing of times fail on years below
    // 1000 and BC (libs/db timestamps.ts). Dates (1082) are left as they are: we store none.
    types: {
      timestamp: {
        to: TIMESTAMPTZ,
        from: [TIMESTAMP, TIMESTAMPTZ],
        serialize: postgresTimestampText,
        parse: parsePostgresTimestamp,
      },
    },
    ...(reconnectDelayMs && { backoff: (failures: number) => reconnectDelayMs(failures) / 1000 }),
  };
  return postgres(databaseUrl, poolOptions);
}
