import typia from "typia";
import { InvalidInput } from "../kernel/problems";
import { describeTypiaErrors } from "../kernel/validation-problems";
import type { Permission } from "./permissions";

/** `POST /api/v2/keys`: the permissions of the new key. */
export interface NewApiKeyBody {
  /** Each one a permission the calling key holds; none makes a key that can do nothing. */
  permissions: Permission[];
}

const validateNewApiKey = typia.createValidateEquals<NewApiKeyBody>();

/** The body read, every problem named at once (InvalidInput); a permission named twice counts once. */
export function parseNewApiKey(body: unknown): NewApiKeyBody {
  const result = validateNewApiKey(body === "" ? {} : body);
  if (!result.success) throw new InvalidInput(describeTypiaErrors(result.errors));
  return { permissions: [...new Set(result.data.permissions)] };
}
