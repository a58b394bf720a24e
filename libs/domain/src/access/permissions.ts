export const PERMISSIONS = ["campaign:read", "campaign:write", "profile:read", "changes:read", "intake:read"] as const;
export type Permission = (typeof PERMISSIONS)[number];

export function isPermission(value: string): value is Permission {
  return (PERMISSIONS as readonly string[]).includes(value);
}
