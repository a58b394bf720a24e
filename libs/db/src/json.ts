import type postgres from "postgres";
import type { Db } from "./connect";

type Json = null | boolean | number | string | readonly Json[] | { readonly [key: string]: Json };

/**
 * What JSON.stringify writes as it is: no bigint, symbol or function anywhere in it (an undefined
 * field is left out). Json itself is taken at once: walking a recursive type would not end. So is
 * unknown, the type of what a parser of JSON gave (a journey file's condition groups).
 */
export type JsonSerializable<T> = unknown extends T
  ? T
  : T extends Json | undefined
    ? T
    : T extends bigint | symbol | ((...args: never[]) => unknown)
      ? never
      : { [K in keyof T]: JsonSerializable<T[K]> };

/**
 * `value` as a JSON parameter. postgres.js's sql.json takes its own JSONValue, which no interface
 * is assignable to (an interface has no index signature), however JSON it is: checked here instead.
 */
export function jsonParameter<T>(sql: Db, value: T & JsonSerializable<T>): postgres.Parameter {
  return json(sql, value);
}

/** The one place a value checked by JsonSerializable meets postgres.js's JSONValue. */
function json(sql: Db, value: unknown): postgres.Parameter {
  return sql.json(value as postgres.JSONValue);
}

/** The Postgres types a JSON row's field is read as. */
type ColumnType = "integer" | "bigint" | "float8" | "boolean" | "text" | "uuid" | "jsonb";

/**
 * `(SELECT column, … FROM rows) AS alias`: rows sent to a statement as one JSON parameter and
 * read as columns named as Row's fields, one for each field and none other, of the type
 * `columns` gives. A JSON null is SQL's NULL, whatever the type.
 *
 * Each row travels as a JSON array of its fields in the order of `columns`, and each column is
 * read by its position, both worked out here from `columns`: Postgres takes an array's element by
 * position for less than an object's field by name, and the document is shorter. Read by name
 * (jsonb_to_recordset), the worker's merge of 500 identifies cost Postgres 3 µs more per row,
 * about a fifth (json_to_recordset: 20 µs more).
 */
export function jsonRows<Row>(
  sql: Db,
  rows: readonly Row[] & JsonSerializable<readonly Row[]>,
  alias: string,
  columns: { readonly [K in keyof Row & string]-?: ColumnType },
): postgres.PendingQuery<postgres.Row[]> {
  const names = Object.keys(columns) as (keyof Row & string)[];
  const tuples = rows.map((row) => names.map((name) => row[name] ?? null));
  const read = names
    .map((name, i) => {
      const type = columns[name];
      const field =
        type === "jsonb" ? `nullif(j -> ${i}, 'null')` : type === "text" ? `j ->> ${i}` : `(j ->> ${i})::${type}`;
      return `${field} AS "${name}"`;
    })
    .join(", ");
  return sql`(SELECT ${sql.unsafe(read)} FROM jsonb_array_elements(${json(sql, tuples)}::jsonb) AS j) AS ${sql(alias)}`;
}
