import type { JsonObject } from "@bufbuild/protobuf";
import { RegistryProblemsError, type RegistryProblem } from "../agents/problem.js";
import type { AgentRegistry } from "../agents/registry.js";
import { isReservationName, newReservationName, prefixProblem, type DeployedNetwork, type TemporaryDeployment, type TemporaryNetworkSpec } from "../agents/temporary-networks.js";
import { AxonError, Code, invalidArgument, notFound, type FieldViolation } from "../errors.js";
import { isJsonObject } from "../json.js";
import type { Clock } from "../operations/clock.js";
import { decide, type Policy } from "../operations/policy.js";
import { capacityLock } from "../operations/transfers/capacity-lock.js";
import type { Database, PrismaClient, TemporaryNetwork as TemporaryNetworkRow } from "../store/database.js";

/** The operation the policy is asked about for a reservation; its target is `{prefix}`. */
export const RESERVE_OPERATION = "network.reserve";
// Any constant will do, so long as every replica takes the same one (and it is no other lock's).
const reservationLockKey = 7_426_160_303;

export interface TemporaryNetworkLimits {
  /** How many may be served at once, across replicas; 0 or less = no limit (neuro-san's AGENT_MAX_TEMP_NETWORKS). */
  maxNetworks: number;
  /** The longest lifetime granted, and the one given when none is asked for. */
  maxLifetimeSeconds: number;
  /** AGENT_EXTERNAL_SERVER_URL, for neuro-san's reservation URL. */
  externalServerUrl: string | undefined;
}

export interface TemporaryNetwork {
  name: string;
  clientId: string;
  spec: JsonObject;
  public: boolean;
  createdAt: Date;
  expiresAt: Date;
  /** neuro-san's `Reservation.get_url()`. */
  url: string;
}

export interface CreateTemporaryNetwork {
  prefix: string;
  spec: JsonObject | undefined;
  lifetimeSeconds: number | undefined;
  public: boolean;
}

export interface TemporaryNetworksOptions {
  /** Read at each use: until the database opens, a stand-in that answers as an outage does. */
  database: Pick<Database, "prisma" | "provider">;
  clock: Clock;
  policy: Policy;
  limits: TemporaryNetworkLimits;
  /** Checks a spec as a network file is checked, and serves what changed here at once. */
  registry: Pick<AgentRegistry, "checkTemporaryNetwork">;
  /** Told after each change made here, so that this replica serves it before the call answers. */
  changed: () => Promise<void>;
}

/**
 * Temporary networks kept in the database (neuro-san's reservations, with external storage): reserved by a client the
 * policy lets (operation `network.reserve`), validated as network files are, counted across replicas under one lock,
 * and served until they expire. Rows are written once and deleted, never changed.
 */
export class TemporaryNetworks {
  constructor(private readonly options: TemporaryNetworksOptions) {}

  private get prisma(): PrismaClient {
    return this.options.database.prisma;
  }

  async create(clientId: string, request: CreateTemporaryNetwork): Promise<{ network: TemporaryNetwork; warnings: string[] }> {
    const { policy, limits, clock, registry } = this.options;
    const violations: FieldViolation[] = [];
    const problem = prefixProblem(request.prefix);
    if (problem !== undefined) violations.push({ field: "prefix", description: problem });
    const lifetime = request.lifetimeSeconds;
    if (lifetime !== undefined && !(Number.isFinite(lifetime) && lifetime > 0)) violations.push({ field: "lifetime_seconds", description: "a positive number of seconds" });
    if (!isJsonObject(request.spec) || Object.keys(request.spec).length === 0) violations.push({ field: "spec", description: "is required: an agent network spec, as a network file holds it" });
    if (violations.length > 0) throw invalidArgument("INVALID_TEMPORARY_NETWORK", "the temporary network request is not valid", violations);

    const decision = decide(policy, { clientId, operation: RESERVE_OPERATION, target: { prefix: request.prefix } }, []);
    if (decision.effect !== "allow") {
      throw new AxonError(Code.PermissionDenied, "POLICY_DENIED", "the policy does not allow this client to reserve temporary networks", {
        metadata: { category: "authorization", operation: RESERVE_OPERATION },
      });
    }

    const name = newReservationName(request.prefix);
    const spec = request.spec as JsonObject;
    const warnings = checked(() => registry.checkTemporaryNetwork({ name, spec, public: request.public }));
    // neuro-san caps the lifetime asked for at the server's maximum, and so does Axon: the answer says what was granted.
    const seconds = Math.min(lifetime ?? limits.maxLifetimeSeconds, limits.maxLifetimeSeconds);
    const { database } = this.options;
    const row = await capacityLock(database.prisma, database.provider, reservationLockKey)(async (tx) => {
      const now = clock.now();
      if (limits.maxNetworks > 0) {
        const served = await tx.temporaryNetwork.findMany({ where: { expiresAt: { gt: now } }, select: { expiresAt: true }, orderBy: { expiresAt: "asc" }, take: limits.maxNetworks });
        if (served.length >= limits.maxNetworks) throw tooMany(limits.maxNetworks, served[0]!.expiresAt, now);
      }
      return tx.temporaryNetwork.create({
        data: { name, clientId, spec, public: request.public, createdAt: now, expiresAt: new Date(now.getTime() + seconds * 1000) },
      });
    });
    await this.options.changed();
    return { network: this.networkOf(row), warnings: warnings.map(describeWarning) };
  }

  /**
   * Deploys what a coded tool's Reservationist reserved (neuro-san's `allow.reservations`), all or none: the names it
   * made, each spec checked as a network file is, lifetimes capped, counted against the limit together. They are
   * private, and owned by `owner` (the network whose tool deployed them), which no client can name.
   */
  async deploy(owner: string, deployments: readonly TemporaryDeployment[]): Promise<DeployedNetwork[]> {
    const { limits, clock, registry, database } = this.options;
    const violations: FieldViolation[] = [];
    deployments.forEach(({ name, lifetimeSeconds }, index) => {
      if (!isReservationName(name) || prefixProblem(name.slice(0, -37)) !== undefined) violations.push({ field: `deployments[${index}].name`, description: "a reserved name: a prefix without / : or spaces, a dash, a UUID" });
      if (!(Number.isFinite(lifetimeSeconds) && lifetimeSeconds > 0)) violations.push({ field: `deployments[${index}].lifetime_seconds`, description: "a positive number of seconds" });
    });
    if (violations.length > 0) throw invalidArgument("INVALID_TEMPORARY_NETWORK", "the reservations cannot be deployed", violations);
    for (const { name, spec } of deployments) checked(() => registry.checkTemporaryNetwork({ name, spec, public: false }));
    const rows = await capacityLock(database.prisma, database.provider, reservationLockKey)(async (tx) => {
      const now = clock.now();
      if (limits.maxNetworks > 0) {
        const served = await tx.temporaryNetwork.findMany({ where: { expiresAt: { gt: now } }, select: { expiresAt: true }, orderBy: { expiresAt: "asc" }, take: limits.maxNetworks });
        if (served.length + deployments.length > limits.maxNetworks) throw tooMany(limits.maxNetworks, served[0]?.expiresAt ?? now, now);
      }
      const created: TemporaryNetworkRow[] = [];
      for (const { name, lifetimeSeconds, spec } of deployments) {
        const expiresAt = new Date(now.getTime() + Math.min(lifetimeSeconds, limits.maxLifetimeSeconds) * 1000);
        created.push(await tx.temporaryNetwork.create({ data: { name, clientId: owner, spec, public: false, createdAt: now, expiresAt } }));
      }
      return created;
    });
    await this.options.changed();
    return rows.map(({ name, expiresAt }) => ({ name, expiresAt }));
  }

  /** The client's own temporary networks that have not expired, soonest to expire first. */
  async list(clientId: string): Promise<TemporaryNetwork[]> {
    const rows = await this.prisma.temporaryNetwork.findMany({ where: { clientId, expiresAt: { gt: this.options.clock.now() } }, orderBy: [{ expiresAt: "asc" }, { name: "asc" }] });
    return rows.map((row) => this.networkOf(row));
  }

  /** Another client's network is as absent as an expired one. */
  async get(clientId: string, name: string): Promise<TemporaryNetwork> {
    const row = isReservationName(name) ? await this.prisma.temporaryNetwork.findFirst({ where: { name, clientId, expiresAt: { gt: this.options.clock.now() } } }) : null;
    if (row === null) throw temporaryNetworkNotFound(name);
    return this.networkOf(row);
  }

  async delete(clientId: string, name: string): Promise<void> {
    const { count } = isReservationName(name)
      ? await this.prisma.temporaryNetwork.deleteMany({ where: { name, clientId, expiresAt: { gt: this.options.clock.now() } } })
      : { count: 0 };
    if (count === 0) throw temporaryNetworkNotFound(name);
    await this.options.changed();
  }

  /** Every network being served now, for the registries of this replica. */
  async served(): Promise<TemporaryNetworkSpec[]> {
    const rows = await this.prisma.temporaryNetwork.findMany({ where: { expiresAt: { gt: this.options.clock.now() } }, orderBy: { createdAt: "asc" } });
    return rows.map(({ name, spec, public: listed, expiresAt }) => ({ name, spec: spec as JsonObject, public: listed, expiresAt }));
  }

  /** Removes the rows of expired networks, which nothing serves any more. */
  async sweep(): Promise<number> {
    const { count } = await this.prisma.temporaryNetwork.deleteMany({ where: { expiresAt: { lte: this.options.clock.now() } } });
    return count;
  }

  private networkOf(row: TemporaryNetworkRow): TemporaryNetwork {
    const { externalServerUrl } = this.options.limits;
    return {
      name: row.name,
      clientId: row.clientId,
      spec: row.spec as JsonObject,
      public: row.public,
      createdAt: row.createdAt,
      expiresAt: row.expiresAt,
      url: externalServerUrl === undefined ? row.name : `${externalServerUrl}/api/v1/${row.name}`,
    };
  }
}

/** The spec's warnings; its problems as INVALID_ARGUMENT, each under `spec.<key path>`. */
function checked(check: () => RegistryProblem[]): RegistryProblem[] {
  try {
    return check();
  } catch (error) {
    if (!(error instanceof RegistryProblemsError)) throw error;
    throw invalidArgument(
      "INVALID_NETWORK_SPEC",
      "the network spec cannot be served",
      error.problems.map((problem) => ({ field: problem.key === undefined ? "spec" : `spec.${problem.key}`, description: problem.reason })),
    );
  }
}

function describeWarning(problem: RegistryProblem): string {
  return problem.key === undefined ? problem.reason : `${problem.key}: ${problem.reason}`;
}

/** RESOURCE_EXHAUSTED, retried once the soonest of the served networks expires. */
function tooMany(limit: number, soonestExpiry: Date, now: Date): AxonError {
  const retryAfterSeconds = Math.max(1, Math.ceil((soonestExpiry.getTime() - now.getTime()) / 1000));
  return new AxonError(Code.ResourceExhausted, "TEMPORARY_NETWORKS_EXHAUSTED", "the server serves as many temporary networks as it may", {
    metadata: { category: "rate_limited", limit: String(limit), scope: "global", retry_after_seconds: String(retryAfterSeconds) },
    retryAfterSeconds,
    quotaViolations: [{ subject: "global", description: `at most ${limit} temporary networks at once (AGENT_MAX_TEMP_NETWORKS)` }],
  });
}

function temporaryNetworkNotFound(name: string): AxonError {
  return notFound("TEMPORARY_NETWORK_NOT_FOUND", "temporary network not found", { name: name.slice(0, 200) });
}
