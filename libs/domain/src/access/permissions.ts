export const PERMISSIONS = [
  "campaign:read",
  "campaign:write",
  "profile:read",
  "changes:read",
  "intake:read",
  "keys:read",
  "keys:write",
  "webhooks:read",
  "webhooks:write",
] as const;
export type Permission = (typeof PERMISSIONS)[number];

export function isPermission(value: string): value is Permission {
  return (PERMISSIONS as readonly string[]).includes(value);
}

/**
 * The permissions of `asked` that `held` lacks, in PERMISSIONS' order: a key creates only keys
 * that can do what it can, so that keys:write never grants more than its holder has.
 */
export function permissionsNotHeld(held: readonly Permission[], asked: readonly Permission[]): Permission[] {
  return PERMISSIONS.filter((permission) => asked.includes(permission) && !held.includes(permission));
}
