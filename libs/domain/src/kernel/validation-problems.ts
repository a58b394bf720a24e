import type { IValidation } from "typia";
import type { Problem } from "./problems";

/**
 * typia's errors as problems in words a client developer reads (`email must be an email
 * address`), not as typia's type expressions (`string & Format<"email">`). `root` names the
 * input itself, whose path is "".
 */
export function describeTypiaErrors(errors: IValidation.IError[], root = "body"): Problem[] {
  return errors.map((error) => {
    const path = error.path.replace(/^\$input\.?/, "");
    return { path, message: typiaErrorMessage(path || root, error) };
  });
}

const OBJECT = "a JSON object";

function typiaErrorMessage(subject: string, { expected, value }: IValidation.IError): string {
  // validateEquals reports a property the type does not have as one that must be undefined.
  if (expected === "undefined") return `${subject} is not a known field`;
  const nouns = typeNouns(expected);
  if (nouns === null) return `${subject} has the wrong type`;
  if (value === undefined) return `${subject} is required and must be ${either(nouns)}`;
  // typia names an object only when it matched none of the object types of a union.
  if (nouns.includes(OBJECT) && typeof value === "object" && value !== null && !Array.isArray(value)) {
    return `${subject} does not match any of the allowed object shapes`;
  }
  return `${subject} must be ${either(nouns)}`;
}

/** `a, b or c`; a list of three or more literals reads `one of "a", "b", "c"`. */
function either(nouns: string[]): string {
  const last = nouns[nouns.length - 1] as string;
  if (nouns.length === 1) return last;
  if (nouns.length > 2 && nouns.every((noun) => LITERAL.test(noun))) return `one of ${nouns.join(", ")}`;
  return `${nouns.slice(0, -1).join(", ")} or ${last}`;
}

const LITERAL = /^(".*"|-?[0-9][0-9.e+-]*|true|false|null)$/;

/** A noun for each type a typia `expected` union allows (`an integer`), or null for one it cannot name. */
function typeNouns(expected: string): string[] | null {
  const nouns = new Set<string>();
  for (const member of unionMembers(expected)) {
    if (member === "undefined") continue; // optional: absence is never the problem reported
    if (member === "boolean") {
      nouns.add("true").add("false");
      continue;
    }
    const noun = typeNoun(member);
    if (noun === null) return null;
    nouns.add(noun);
  }
  if (nouns.size === 0) return null;
  // "a string or null" reads better than "null or a string", which is how typia may order them.
  return [...nouns].sort((a, b) => Number(a === "null") - Number(b === "null"));
}

/** The members of a union, parentheses unwrapped: `((a & b) | c)` → `a & b`, `c`. */
function unionMembers(type: string): string[] {
  return splitOutside(type.trim(), "|").flatMap((member) =>
    isGroup(member) ? unionMembers(member.slice(1, -1)) : [member],
  );
}

/** The parts of an intersection, parentheses unwrapped: `(string & MinLength<1>)` → `string`, `MinLength<1>`. */
function intersectionParts(type: string): string[] {
  return splitOutside(type, "&").flatMap((part) => (isGroup(part) ? intersectionParts(part.slice(1, -1)) : [part]));
}

/** A noun for one member such as `string & MaxLength<254>`: its base type, narrowed by its tags. */
function typeNoun(member: string): string | null {
  const [base = "", ...tagTexts] = intersectionParts(member);
  const tags = parseTags(tagTexts);
  if (tags === null) return null;
  if (base === "string") return stringNoun(tags);
  if (base === "number") return numberNoun(tags);
  if (base.startsWith("Array<")) return `an array${bounds(tags.MinItems, tags.MaxItems, "item")}`;
  if (tagTexts.length > 0) return null;
  if (LITERAL.test(base)) return base;
  // A Record, an interface (`IdentifyChannel`) or an anonymous object type (`__type`, `__type.o1`).
  if (base.startsWith("Record<") || /^(__type|[A-Z])[\w$.]*$/.test(base)) return OBJECT;
  return null;
}

interface Tags {
  Format?: string;
  Pattern?: string;
  Type?: string;
  Minimum?: number;
  Maximum?: number;
  MinLength?: number;
  MaxLength?: number;
  MinItems?: number;
  MaxItems?: number;
}

/** The tags worded here, with the type of their argument. */
const TAG_ARGUMENTS: Record<string, "string" | "number"> = {
  Format: "string",
  Pattern: "string",
  Type: "string",
  Minimum: "number",
  Maximum: "number",
  MinLength: "number",
  MaxLength: "number",
  MinItems: "number",
  MaxItems: "number",
};

/** Tags as typia writes them (`MaxLength<254>`, `Format<"email">`), or null if one is not worded here. */
function parseTags(texts: string[]): Tags | null {
  const tags: Record<string, unknown> = {};
  for (const text of texts) {
    const [, name = "", argument = ""] = /^(\w+)<(.*)>$/s.exec(text) ?? [];
    const value = parseJson(argument);
    if (typeof value !== TAG_ARGUMENTS[name]) return null;
    tags[name] = value;
  }
  return tags;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const FORMATS: Record<string, string> = {
  email: "an email address",
  uri: "a URI",
  url: "a URL",
  uuid: "a UUID",
  "date-time": "a date-time such as 2024-05-01T09:30:00Z",
  date: "a date such as 2024-05-01",
  ipv4: "an IPv4 address",
  ipv6: "an IPv6 address",
};

function stringNoun(tags: Tags): string {
  const format = tags.Format;
  const noun = format === undefined ? "a string" : (FORMATS[format] ?? `a string in the ${format} format`);
  const matching = tags.Pattern === undefined ? "" : ` matching the pattern ${tags.Pattern}`;
  return `${noun}${bounds(tags.MinLength, tags.MaxLength, "character")}${matching}`;
}

function numberNoun(tags: Tags): string {
  const integer = tags.Type?.includes("int") ?? false;
  const minimum = tags.Minimum ?? (tags.Type?.startsWith("uint") ? 0 : undefined);
  return `${integer ? "an integer" : "a number"}${bounds(minimum, tags.Maximum)}`;
}

/** ` from 1 to 64`, ` of at most 254 characters`, or "" without bounds. */
function bounds(min: number | undefined, max: number | undefined, unit?: string): string {
  const count = (n: number) => (unit === undefined ? `${n}` : `${n} ${unit}${n === 1 ? "" : "s"}`);
  if (min !== undefined && max !== undefined)
    return unit === undefined ? ` from ${min} to ${max}` : ` of ${min} to ${count(max)}`;
  if (min !== undefined) return ` of at least ${count(min)}`;
  if (max !== undefined) return ` of at most ${count(max)}`;
  return "";
}

/** Splits `text` at each `separator` outside quotes and brackets. */
function splitOutside(text: string, separator: "|" | "&"): string[] {
  const parts: string[] = [];
  let start = 0;
  scanOutside(text, (index, depth) => {
    if (depth === 0 && text[index] === separator) {
      parts.push(text.slice(start, index).trim());
      start = index + 1;
    }
  });
  parts.push(text.slice(start).trim());
  return parts;
}

/** Whether `text` is one parenthesised group, as `(string | null)` is and `(a) | (b)` is not. */
function isGroup(text: string): boolean {
  if (!text.startsWith("(")) return false;
  let closes = -1;
  scanOutside(text, (index, depth) => {
    if (depth === 0 && closes === -1) closes = index;
  });
  return closes === text.length - 1;
}

/** Calls `visit` with each character's index outside quoted strings and the bracket depth after it. */
function scanOutside(text: string, visit: (index: number, depth: number) => void): void {
  let depth = 0;
  let quoted = false;
  for (let index = 0; index < text.length; index++) {
    const char = text[index] as string;
    if (quoted) {
      if (char === "\\") index++;
      else if (char === '"') quoted = false;
      continue;
    }
    if (char === '"') quoted = true;
    else if ("(<[{".includes(char)) depth++;
    else if (")>]}".includes(char)) depth--;
    visit(index, depth);
  }
}
