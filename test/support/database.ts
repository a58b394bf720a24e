import { connect, migrate, type Sql } from "@cm/db";
import { ADMIN_DATABASE_URL, uniqueName } from "./env";

export interface TestDatabase {
  url: string;
  sql: Sql;
  drop(): Promise<void>;
}

/** A new database of its own for one test file, migrated unless a test migrates it itself. */
export async function createTestDatabase(label: string, { migrated = true } = {}): Promise<TestDatabase> {
  const name = uniqueName(`cm_test_${label}`);
  const admin = connect(ADMIN_DATABASE_URL, { max: 1 });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(ADMIN_DATABASE_URL);
  url.pathname = `/${name}`;
  const sql = connect(url.toString(), { max: 8 });
  if (migrated) await migrate(sql);
  return {
    url: url.toString(),
    sql,
    async drop() {
      await sql.end({ timeout: 1 });
      const cleanup = connect(ADMIN_DATABASE_URL, { max: 1 });
      await cleanup.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await cleanup.end();
    },
  };
}
