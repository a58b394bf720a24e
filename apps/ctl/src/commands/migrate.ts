import { migrate, type Sql } from "@cm/db";

export async function migrateCommand(sql: Sql): Promise<{ migrated: string[] }> {
  return { migrated: await migrate(sql) };
}
