import { createHash } from "node:crypto";
import type { PeriodicInteraction } from "../agents/periodic.js";
import type { AgentRegistry } from "../agents/registry.js";
import { AxonError, Code } from "../errors.js";
import type { Logger } from "../logger.js";
import type { Database } from "../store/database.js";
import { DatabaseNotOpen, isStorageError } from "../store/storage-errors.js";
import type { OperationsBroker } from "./broker.js";
import type { Clock } from "./clock.js";

export interface PeriodicRunsOptions {
  registry: Pick<AgentRegistry, "periodicRuns">;
  broker: Pick<OperationsBroker, "submit">;
  database: Pick<Database, "prisma">;
  clock: Clock;
  logger: Logger;
  /** The client the runs are submitted as (AXON_PERIODIC_CLIENT, `system` by default). */
  clientId: string;
  /** A tick missed while every replica was down: run once on return, or skipped (AXON_PERIODIC_MISSED_TICKS). */
  missedTicks: "run" | "skip";
}

/**
 * The manifests' `periodic` schedules, run as `agent.chat` operations under the operations lifecycle (policy,
 * admission, the worker, the operations API). Every replica looks at every schedule; a tick's operation has an
 * idempotency key made of the network, the interaction and the tick's time, so whichever replicas submit it, the
 * database's unique key makes it one operation: each tick runs exactly once.
 */
export class PeriodicRuns {
  /** Per schedule, the time up to which its ticks are handled (epoch milliseconds). */
  private readonly handledUntil = new Map<string, number>();
  private passing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: PeriodicRunsOptions) {}

  /** Looks for due ticks every `intervalMs`; the timer never keeps the process up. */
  start(intervalMs = 1000): void {
    this.close();
    this.timer = setInterval(() => {
      if (this.passing === undefined) void this.runDue();
    }, intervalMs);
    this.timer.unref();
  }

  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /**
   * Submits the latest tick of each schedule that is due and not handled yet: one run, however many ticks passed
   * since the last (a replica that was busy, or every replica down). Passes run one at a time.
   */
  runDue(): Promise<void> {
    const pass = (this.passing ?? Promise.resolve()).then(() => this.pass());
    const settled = pass.finally(() => {
      if (this.passing === settled) this.passing = undefined;
    });
    this.passing = settled;
    return settled;
  }

  private async pass(): Promise<void> {
    const now = this.options.clock.now();
    for (const { network, interactions } of this.options.registry.periodicRuns()) {
      for (const interaction of interactions) {
        // A database out of reach leaves the tick unhandled, for the next pass.
        await this.runTick(network, interaction, now).catch((error: unknown) => {
          this.options.logger.warn({ err: error, network, interaction: interaction.index, category: "storage" }, "a periodic run could not be looked at");
        });
      }
    }
  }

  private async runTick(network: string, interaction: PeriodicInteraction, now: Date): Promise<void> {
    const schedule = scheduleKey(network, interaction);
    const handled = this.handledUntil.get(schedule) ?? (await this.firstHandled(schedule, now));
    this.handledUntil.set(schedule, handled);
    const tick = interaction.schedule.previous(now);
    if (tick === undefined || tick.getTime() <= handled) return;
    const { broker, clientId, logger } = this.options;
    try {
      await broker.submit(clientId, {
        idempotencyKey: `${schedule}${Math.floor(tick.getTime() / 1000)}`,
        operation: "agent.chat",
        target: { network },
        arguments: { text: interaction.text, sly_data: interaction.slyData, metadata: interaction.metadata },
        reason: `periodic run of ${network} (${interaction.cronSchedule})`,
      });
    } catch (error) {
      // The database may be back by the next pass; anything else (a refusal) would only be refused again.
      if (isStorageError(error) || error instanceof DatabaseNotOpen || (error instanceof AxonError && error.code === Code.Unavailable)) throw error;
      logger.warn({ err: error, network, interaction: interaction.index, tick: tick.toISOString() }, "a periodic run was not submitted");
    }
    this.handledUntil.set(schedule, tick.getTime());
  }

  /**
   * Where a schedule this replica has not handled before starts: after its last run recorded in the database when
   * missed ticks run (so one missed while every replica was down runs now), else from now on. A schedule never run
   * before starts from now: its past ticks were not missed.
   */
  private async firstHandled(schedule: string, now: Date): Promise<number> {
    if (this.options.missedTicks === "skip") return now.getTime();
    const last = await this.options.database.prisma.operation.findFirst({
      where: { clientId: this.options.clientId, idempotencyKey: { startsWith: schedule } },
      orderBy: { idempotencyKey: "desc" },
      select: { idempotencyKey: true },
    });
    // A key older than the replay window was retired as `<key>~retired~<id>`.
    const seconds = last === null ? NaN : Number(last.idempotencyKey.slice(schedule.length).split("~")[0]);
    return Number.isFinite(seconds) ? seconds * 1000 : now.getTime();
  }
}

/**
 * The prefix of a schedule's idempotency keys, to which each tick adds its time in seconds (ten digits until 2286, so
 * keys sort by time): the network, the interaction and its cron schedule, hashed to fit the key's characters.
 */
function scheduleKey(network: string, interaction: PeriodicInteraction): string {
  const hash = createHash("sha256").update(`${network}\n${interaction.index}\n${interaction.cronSchedule}`).digest("hex").slice(0, 16);
  return `periodic.${hash}.`;
}
