/** Resource ids are Postgres `serial` integers: any other path segment names no resource. */
export function idFromPath(segment: string | undefined): number | null {
  if (segment === undefined || !/^[1-9][0-9]{0,9}$/.test(segment)) return null;
  const id = Number(segment);
  return id <= 2_147_483_647 ? id : null;
}
