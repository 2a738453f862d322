/** Limits and lifetimes of sealed payloads and streams (Agent V1 §6), read from the environment with defaults. */
export interface TransferSettings {
  /** base64 of 32 bytes; without it a key is generated once under the data directory (one replica only). */
  sealingKey: string | undefined;
  sealedTtlSeconds: number;
  sealedMaxPerClient: number;
  sealedMaxClientBytes: number;
  sealedMaxTotalBytes: number;
  streamTtlSeconds: number;
  /** An upload still running after this long is cut, and its partial rows are swept. */
  streamUploadTimeoutSeconds: number;
  streamMaxBytes: number;
  streamMaxPerClient: number;
  streamMaxClientBytes: number;
  streamMaxTotalBytes: number;
}

const MiB = 1024 * 1024;
/** Sizes are 32-bit integer columns. */
const largestStream = 2 ** 31 - 1;

export function transferSettingsFromEnv(env: NodeJS.ProcessEnv): TransferSettings {
  return {
    sealingKey: env.AXON_SEALING_KEY || undefined,
    sealedTtlSeconds: positive(env, "AXON_SEALED_TTL_SECONDS", 3600),
    sealedMaxPerClient: positive(env, "AXON_SEALED_MAX_PER_CLIENT", 100),
    sealedMaxClientBytes: positive(env, "AXON_SEALED_MAX_CLIENT_BYTES", 64 * MiB),
    sealedMaxTotalBytes: positive(env, "AXON_SEALED_MAX_TOTAL_BYTES", 1024 * MiB),
    streamTtlSeconds: positive(env, "AXON_STREAM_TTL_SECONDS", 3600),
    streamUploadTimeoutSeconds: positive(env, "AXON_STREAM_UPLOAD_TIMEOUT_SECONDS", 600),
    streamMaxBytes: Math.min(positive(env, "AXON_STREAM_MAX_BYTES", 64 * MiB), largestStream),
    streamMaxPerClient: positive(env, "AXON_STREAM_MAX_PER_CLIENT", 100),
    streamMaxClientBytes: positive(env, "AXON_STREAM_MAX_CLIENT_BYTES", 256 * MiB),
    streamMaxTotalBytes: positive(env, "AXON_STREAM_MAX_TOTAL_BYTES", 2048 * MiB),
  };
}

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return value;
}
