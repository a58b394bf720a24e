/**
 * `application/x-www-form-urlencoded` bodies as Vero's own API (a Rails app) reads them: Rack's
 * bracket nesting (`data[age]=20`, `channels[][type]=push`, `extras[created_at]=…`), values as
 * strings, a name without `=` as null. Lists written with indices (`channels[0][type]=push`, as
 * PHP's http_build_query and JavaScript's qs write them) become lists too.
 */

export type FormValue = string | null | FormValue[] | FormObject;
export interface FormObject {
  [key: string]: FormValue;
}

export class FormBodyError extends Error {}

/** Rack's default: deeper nesting is refused rather than followed. */
const MAX_DEPTH = 32;
const INDEX = /^(0|[1-9]\d{0,5})$/;

/** Objects without a prototype: a field named `__proto__` or `toString` is just a field. */
const newObject = (): FormObject => Object.create(null) as FormObject;
const isObject = (value: FormValue | undefined): value is FormObject =>
  value !== null && typeof value === "object" && !Array.isArray(value);

function decode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, " "));
  } catch {
    throw new FormBodyError("the form body has a malformed percent-encoding");
  }
}

/** Rack's `params_hash_has_key?`: whether a later `x[][key]` belongs to a new list entry. */
function hasKey(object: FormObject, key: string): boolean {
  if (key.includes("[]")) return false;
  let current: FormValue = object;
  for (const part of key.split(/[[\]]+/)) {
    if (part === "") continue;
    if (!isObject(current) || !Object.hasOwn(current, part)) return false;
    current = current[part] as FormValue;
  }
  return true;
}

function listAt(params: FormObject, key: string): FormValue[] {
  const existing = params[key] ?? [];
  // The message names no field: a field name can be anything, an email address too.
  if (!Array.isArray(existing)) throw new FormBodyError("a form field is both a list and a value");
  params[key] = existing;
  return existing;
}

/** Rack's `normalize_params`, step by step. */
function assign(params: FormObject, name: string, value: string | null, depth: number): FormValue {
  if (depth >= MAX_DEPTH) throw new FormBodyError(`form field names nest deeper than ${MAX_DEPTH} levels`);
  let key: string;
  let after: string;
  const close = name.indexOf("]", 1);
  if (depth === 0) {
    const open = name.indexOf("[", 1);
    [key, after] = open === -1 ? [name, ""] : [name.slice(0, open), name.slice(open)];
  } else if (name.startsWith("[]")) {
    [key, after] = ["[]", name.slice(2)];
  } else if (name.startsWith("[") && close !== -1) {
    [key, after] = [name.slice(1, close), name.slice(close + 1)];
  } else {
    [key, after] = [name, ""];
  }
  if (key === "") return params;

  if (after === "") {
    if (key === "[]" && depth !== 0) return [value];
    // Rack would let the value replace an object or list given before; the reverse order is
    // refused below, so this order is too (the answer must not depend on the order).
    const existing = params[key];
    if (existing !== undefined && existing !== null && typeof existing === "object")
      throw new FormBodyError("a form field is both an object and a value");
    params[key] = value;
  } else if (after === "[") {
    params[name] = value;
  } else if (after === "[]") {
    listAt(params, key).push(value);
  } else if (after.startsWith("[]")) {
    const inner = after.slice(3, -1);
    const childKey =
      after[2] === "[" && after.endsWith("]") && inner !== "" && !/[[\]]/.test(inner) ? inner : after.slice(2);
    const list = listAt(params, key);
    const last = list[list.length - 1];
    if (isObject(last) && !hasKey(last, childKey)) assign(last, childKey, value, depth + 1);
    else list.push(assign(newObject(), childKey, value, depth + 1));
  } else {
    const child = params[key] ?? newObject();
    if (!isObject(child)) throw new FormBodyError("a form field is both an object and a value");
    params[key] = assign(child, after, value, depth + 1);
  }
  return params;
}

/** `{"0": a, "1": b}` is the list `[a, b]`, at every depth. */
function indexedListsAsLists(value: FormValue): FormValue {
  if (Array.isArray(value)) return value.map(indexedListsAsLists);
  if (!isObject(value)) return value;
  const keys = Object.keys(value);
  if (keys.length > 0 && keys.every((key) => INDEX.test(key))) {
    return keys.sort((a, b) => Number(a) - Number(b)).map((key) => indexedListsAsLists(value[key] as FormValue));
  }
  const object = newObject();
  for (const key of keys) object[key] = indexedListsAsLists(value[key] as FormValue);
  return object;
}

export function parseFormBody(text: string): FormValue {
  const params = newObject();
  for (const pair of text.split("&")) {
    if (pair === "") continue;
    const equals = pair.indexOf("=");
    const name = decode(equals === -1 ? pair : pair.slice(0, equals));
    assign(params, name, equals === -1 ? null : decode(pair.slice(equals + 1)), 0);
  }
  return indexedListsAsLists(params);
}
