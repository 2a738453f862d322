import { randomBytes } from "node:crypto";
import type { Clock } from "../operations/clock.js";

/** One LFS transfer an agent may make: where it really goes, kept in Axon; what the agent holds is the random id. */
export interface LfsCapability {
  clientId: string;
  host: string;
  /** The repository's path on the host (`owner/name.git`). */
  repository: string;
  oid: string;
  size: number;
  method: "GET" | "PUT" | "POST";
  /** The host's action: its URL and headers (a signed URL, an authorization) never reach the agent. */
  href: string;
  headers: Record<string, string>;
  expiresAt: number;
}

/** The longest a capability lives, whatever the host allows its own URLs. */
const MAX_LIFETIME_MS = 60 * 60_000;
/** Capabilities open at once, at most: a batch past it is refused rather than memory grown without bound. */
export const MAX_CAPABILITIES = 100_000;

/**
 * Broker-local, random, expiring capabilities standing in for the host's LFS action URLs (signed storage URLs, mostly):
 * each names one object, one method, one repository and the client it was issued to. They live in this process's
 * memory: a transfer reaches the replica that answered its batch.
 */
export class LfsCapabilities {
  private readonly open = new Map<string, LfsCapability>();

  constructor(private readonly clock: Clock) {}

  /** A new capability's id, or undefined when too many are open. */
  issue(capability: Omit<LfsCapability, "expiresAt">, hostExpiry: { inSeconds?: unknown; at?: unknown }): { id: string; expiresInSeconds: number } | undefined {
    const now = this.clock.now().getTime();
    if (this.open.size >= MAX_CAPABILITIES) return undefined;
    // The host's own URL must not expire before the capability standing in for it.
    const hostExpiresAt =
      typeof hostExpiry.inSeconds === "number" ? now + hostExpiry.inSeconds * 1000 : typeof hostExpiry.at === "string" ? Date.parse(hostExpiry.at) : Number.NaN;
    const expiresAt = Math.min(now + MAX_LIFETIME_MS, Number.isNaN(hostExpiresAt) ? Number.POSITIVE_INFINITY : hostExpiresAt);
    const id = randomBytes(32).toString("base64url");
    this.open.set(id, { ...capability, expiresAt });
    return { id, expiresInSeconds: Math.max(0, Math.floor((expiresAt - now) / 1000)) };
  }

  /** The capability `id` names, if it is open and was issued for this client, host and repository. */
  find(id: string, clientId: string | undefined, host: string, repository: string): LfsCapability | undefined {
    const capability = this.open.get(id);
    if (capability === undefined) return undefined;
    if (capability.expiresAt <= this.clock.now().getTime()) {
      this.open.delete(id);
      return undefined;
    }
    if ((clientId !== undefined && capability.clientId !== clientId) || capability.host !== host || capability.repository !== repository) return undefined;
    return capability;
  }

  /** Forgets the expired ones: once per batch, before it issues more. */
  sweep(): void {
    const now = this.clock.now().getTime();
    for (const [id, capability] of this.open) if (capability.expiresAt <= now) this.open.delete(id);
  }
}
