import type { Sql } from "@cm/db";

/**
 * A transaction driven by hand on a connection of its own, left open until `commit`: to make
 * transactions overlap and commit in an order of the test's choosing (the change feed's tests).
 */
export async function openTransaction(sql: Sql) {
  const connection = await sql.reserve();
  await connection`BEGIN`;
  return {
    run: connection,
    async commit() {
      await connection`COMMIT`;
      connection.release();
    },
  };
}
