/**
 * Polls `probe` until it returns something other than undefined or false, and resolves with that; rejects once
 * `timeoutMs` has passed: the bound of a test that waits for a state another process reaches.
 */
export async function until<T>(probe: () => T | Promise<T>, what: string, timeoutMs = 30_000): Promise<Exclude<T, undefined | false>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value as Exclude<T, undefined | false>;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Rejects when `promise` has not settled in `ms`: the liveness bound of a test that must not hang. */
export function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
