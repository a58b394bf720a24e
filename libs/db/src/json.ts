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
 * The rows travel as one JSON object of named columns, each the array of its rows' values in
 * order (`{"key": ["a", "b"], "created_t": [1, null]}`): the statement takes each column from it
 * by name, once (OFFSET 0 keeps Postgres from taking it again for every row), and row n's value
 * as the column's element n. That costs Postgres what each row as an array read by position did
 * (within 3% either way, for the worker's merge of 500 identifies and for its event store), where
 * each row as an object read by name (jsonb_to_recordset) cost it 17% more for the merge: every
 * object's field names are parsed and sorted (bench/README.md, "How rows travel to Postgres").
 */
export function jsonRows<Row>(
  sql: Db,
  rows: readonly Row[] & JsonSerializable<readonly Row[]>,
  alias: string,
  columns: { readonly [K in keyof Row & string]-?: ColumnType },
): postgres.PendingQuery<postgres.Row[]> {
  const names = Object.keys(columns) as (keyof Row & string)[];
  const [first] = names;
  if (first === undefined) throw new Error("jsonRows reads at least one column");
  const document = Object.fromEntries(names.map((name) => [name, rows.map((row) => row[name] ?? null)]));
  const taken = names.map((name) => `d.document -> '${name}' AS "${name}"`).join(", ");
  const read = names
    .map((name) => {
      const type = columns[name];
      const element = `c."${name}" ->> n.i`;
      const field =
        type === "jsonb" ? `nullif(c."${name}" -> n.i, 'null')` : type === "text" ? element : `(${element})::${type}`;
      return `${field} AS "${name}"`;
    })
    .join(", ");
  const eachRow = `generate_series(0, jsonb_array_length(c."${first}") - 1) AS n (i)`;
  return sql`(SELECT ${sql.unsafe(read)}
                FROM (SELECT ${sql.unsafe(taken)} FROM (SELECT ${json(sql, document)}::jsonb AS document) AS d OFFSET 0) AS c,
                     ${sql.unsafe(eachRow)}) AS ${sql(alias)}`;
}
