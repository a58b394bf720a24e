import type { IValidation } from "typia";

/** typia's errors as `{path, message}`, the path without typia's `$input` root. */
export function describeTypiaErrors(errors: IValidation.IError[], root = "body"): { message: string; path: string }[] {
  return errors.map((error) => {
    const path = error.path.replace(/^\$input\.?/, "");
    return { path, message: `${path || root}: expected ${error.expected}` };
  });
}
