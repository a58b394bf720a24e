/** Resource ids are Postgres `serial` integers: any other path segment names no resource. */
export function idFromPath(segment: string | undefined): number | null {
  if (segment === undefined || !/^[1-9][0-9]{0,9}$/.test(segment)) return null;
  const id = Number(segment);
  return id <= 2_147_483_647 ? id : null;
}

/** Credential and webhook endpoint ids are `bigserial`: shown as text, as a token's middle part shows it. */
export function bigIdFromPath(segment: string | undefined): string | null {
  return segment !== undefined && /^[1-9][0-9]{0,17}$/.test(segment) ? segment : null;
}
