import postgres from "postgres";

export type Sql = postgres.Sql;
/** What a repository function runs on: the pool or an open transaction. */
export type Db = postgres.Sql | postgres.TransactionSql;

export interface ConnectOptions {
  /** Pool size; a worker wants a few connections per concurrent batch, the ctl only one. */
  max?: number;
  applicationName?: string;
}

export function connect(databaseUrl: string, options: ConnectOptions = {}): Sql {
  return postgres(databaseUrl, {
    max: options.max ?? 10,
    onnotice: () => {},
    connect_timeout: 5,
    connection: { application_name: options.applicationName ?? "cm" },
  });
}
