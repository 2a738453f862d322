import { describe, expect, it } from "vitest";
import { transferSettingsFromEnv } from "../../../src/operations/transfers/settings.js";

describe("transferSettingsFromEnv", () => {
  it("has defaults for everything", () => {
    expect(transferSettingsFromEnv({})).toEqual({
      sealingKey: undefined,
      sealedTtlSeconds: 3600,
      sealedMaxPerClient: 100,
      sealedMaxClientBytes: 64 * 1024 * 1024,
      sealedMaxTotalBytes: 1024 * 1024 * 1024,
      streamTtlSeconds: 3600,
      streamUploadTimeoutSeconds: 600,
      streamMaxBytes: 64 * 1024 * 1024,
      streamMaxPerClient: 100,
      streamMaxClientBytes: 256 * 1024 * 1024,
      streamMaxTotalBytes: 2048 * 1024 * 1024,
    });
  });

  it("reads overrides and refuses what is not a positive integer", () => {
    expect(transferSettingsFromEnv({ AXON_SEALED_TTL_SECONDS: "60", AXON_STREAM_MAX_BYTES: "1024" })).toMatchObject({ sealedTtlSeconds: 60, streamMaxBytes: 1024 });
    expect(() => transferSettingsFromEnv({ AXON_SEALED_MAX_PER_CLIENT: "0" })).toThrow(/AXON_SEALED_MAX_PER_CLIENT must be a positive integer/);
    expect(() => transferSettingsFromEnv({ AXON_STREAM_TTL_SECONDS: "1h" })).toThrow(/AXON_STREAM_TTL_SECONDS/);
  });

  it("keeps a stream within the 32-bit size column", () => {
    expect(transferSettingsFromEnv({ AXON_STREAM_MAX_BYTES: String(2 ** 40) }).streamMaxBytes).toBe(2 ** 31 - 1);
  });
});
