/**
 * At most `perSecond` log lines a second for one kind of event; the others are counted and the
 * count is handed to the next line that passes. A failure that hits every request or every
 * fetch (Redis full, Postgres down) then logs a few lines a second, not one per request.
 */
export function logThrottle(perSecond: number): (log: (suppressed: number) => void) => void {
  let windowStart = 0;
  let passed = 0;
  let suppressed = 0;
  return (log) => {
    const now = Date.now();
    if (now - windowStart >= 1000) {
      windowStart = now;
      passed = 0;
    }
    if (passed >= perSecond) {
      suppressed += 1;
      return;
    }
    passed += 1;
    const count = suppressed;
    suppressed = 0;
    log(count);
  };
}
