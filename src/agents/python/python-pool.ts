import os from "node:os";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Config } from "../../config.js";
import type { Logger } from "../../logger.js";
import { pythonImportRoots } from "../coded-tool-location.js";
import { PythonWorker, type CallbackHandlers, type PythonAnswer, type PythonSettings, type PythonTarget } from "./python-worker.js";

export interface PythonPoolSettings extends PythonSettings {
  /** `AXON_PYTHON_WORKERS`: at most this many processes. */
  workers: number;
}

/** The pool as AXON_PYTHON, AXON_PYTHON_WORKERS and AXON_PYTHON_CANCEL_GRACE_SECONDS configure it. */
export function pythonSettingsOf(config: Config): PythonPoolSettings {
  return {
    command: config.python,
    workers: config.pythonWorkers || os.availableParallelism(),
    cancelGraceMs: config.pythonCancelGraceSeconds * 1000,
    importRoots: pythonImportRoots(config.toolPath, config.projectRoot),
  };
}

/**
 * The Python workers of one agent runtime: started with the first Python call (never on the start-up path), one more
 * for a new chat while every worker already has one and the pool is below its size, each replaced by a fresh one when
 * it ends. A chat sticks to one worker, where the values of its sly_data that JSON cannot carry live.
 */
export class PythonPool {
  private workers: PythonWorker[] = [];
  private lastChat = 0;
  private closed = false;

  constructor(
    private readonly settings: PythonPoolSettings,
    private readonly logger: Logger,
  ) {}

  get importRoots(): string[] {
    return this.settings.importRoots;
  }

  /** The Python side of one chat (one request): its calls go to one worker; `close` when the request ends. */
  chat(): PythonChat {
    return new PythonChat(this, ++this.lastChat);
  }

  /** Ends every worker: each exits once its stdin closes, or is killed after `graceMs`. */
  async close(graceMs = 2000): Promise<void> {
    this.closed = true;
    const workers = this.workers;
    this.workers = [];
    await Promise.all(workers.map((worker) => worker.close(graceMs)));
  }

  /** @internal the worker a new chat binds to. */
  bind(): PythonWorker {
    if (this.closed) throw new Error("the Python workers were shut down");
    this.workers = this.workers.filter((worker) => worker.alive);
    const idlest = this.workers.reduce<PythonWorker | undefined>((best, worker) => (best === undefined || worker.chats < best.chats ? worker : best), undefined);
    const worker = idlest === undefined || (idlest.chats > 0 && this.workers.length < this.settings.workers) ? this.start() : idlest;
    worker.chats++;
    return worker;
  }

  private start(): PythonWorker {
    const worker = new PythonWorker(this.settings, this.logger);
    this.workers.push(worker);
    void worker.exited.then(() => {
      this.workers = this.workers.filter((candidate) => candidate !== worker);
    });
    return worker;
  }
}

/**
 * One request's Python calls. Each sly_data dict of the request (a nested network has its own) is a chat of its own in
 * the worker; all of them are ended, and their values with `close()` closed, when the request ends.
 */
export class PythonChat {
  private worker: PythonWorker | undefined;
  private readonly scopes = new WeakMap<JsonObject, string>();
  private readonly used = new Set<string>();
  private readonly watched = new WeakSet<AbortSignal>();

  constructor(
    private readonly pool: PythonPool,
    private readonly id: number,
  ) {}

  /** `callbacks`: what the Python code of this call may ask of Axon while it runs (see CallbackHandlers). */
  call(slyData: JsonObject, call: PythonTarget, progress: (structure: JsonObject) => void, signal: AbortSignal, callbacks?: CallbackHandlers): Promise<PythonAnswer> {
    let chat = this.scopes.get(slyData);
    if (chat === undefined) {
      chat = `${this.id}.${this.used.size}`;
      this.scopes.set(slyData, chat);
      this.used.add(chat);
    }
    // A worker that died took the chat's private values with it: the next call starts over on a fresh one.
    if (this.worker === undefined || !this.worker.alive) this.worker = this.pool.bind();
    // One listener per signal (the request's), however many calls it has in flight.
    if (!this.watched.has(signal)) {
      this.watched.add(signal);
      signal.addEventListener("abort", () => this.worker?.cancelCalls(signal), { once: true });
    }
    return this.worker.call({ ...call, chat, slyData }, progress, signal, callbacks);
  }

  close(): void {
    if (this.worker === undefined) return;
    for (const chat of this.used) this.worker.endChat(chat);
    this.worker.chats--;
    this.worker = undefined;
  }
}
