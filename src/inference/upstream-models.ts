import type { JsonObject } from "@bufbuild/protobuf";
import { isJsonObject } from "../json.js";
import type { Logger } from "../logger.js";
import type { Clock } from "../operations/clock.js";
import { upstreamUrl, type Upstream, type Upstreams } from "./upstreams.js";

/** How long an upstream's list is kept: model lists change on the scale of days, calls come by the second. */
const cacheMs = 60_000;
const listTimeoutMs = 10_000;

/**
 * The models each upstream lists (`GET <base_url>/models`), kept briefly and shared by every client, less those a
 * model name would route elsewhere. An upstream that lists none offers the names in its `models` that hold no `*`.
 * One that cannot be asked is logged and left out (its last list is kept meanwhile).
 */
export class UpstreamModels {
  private readonly cache = new Map<string, { at: number; models: JsonObject[] }>();
  private readonly asking = new Map<string, Promise<JsonObject[]>>();

  constructor(
    private readonly upstreams: Upstreams,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  async of(upstream: Upstream): Promise<JsonObject[]> {
    if (upstream.modelsPath === undefined) {
      return upstream.models.filter((model) => !model.includes("*")).map((id) => ({ id, object: "model", created: 0, owned_by: upstream.name }));
    }
    const cached = this.cache.get(upstream.name);
    if (cached && this.clock.now().getTime() - cached.at < cacheMs) return cached.models;
    let asking = this.asking.get(upstream.name);
    if (asking === undefined) {
      asking = this.ask(upstream).finally(() => this.asking.delete(upstream.name));
      this.asking.set(upstream.name, asking);
    }
    return asking;
  }

  private async ask(upstream: Upstream): Promise<JsonObject[]> {
    const secret = this.upstreams.secretOf(upstream);
    const stale = this.cache.get(upstream.name)?.models ?? [];
    if (secret === undefined) {
      this.logger.warn({ upstream: upstream.name, secret_env: upstream.secretEnv }, "inference upstream not listed: its key variable is not set");
      return stale;
    }
    try {
      const response = await fetch(upstreamUrl(upstream, upstream.modelsPath!), {
        headers: { accept: "application/json", "user-agent": "axon", [upstream.header]: upstream.scheme === undefined ? secret : `${upstream.scheme} ${secret}` },
        signal: AbortSignal.timeout(listTimeoutMs),
      });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const list: unknown = await response.json();
      const data = isJsonObject(list) && Array.isArray(list.data) ? list.data : [];
      const models = data.filter(isJsonObject).filter((model) => typeof model.id === "string" && this.upstreams.route(model.id) === upstream);
      this.cache.set(upstream.name, { at: this.clock.now().getTime(), models });
      return models;
    } catch (error) {
      // Only the kind of failure: a fetch error can quote the URL, never the headers, but nothing more is needed.
      this.logger.warn({ upstream: upstream.name, error: error instanceof Error ? error.message : "failed" }, "inference upstream could not list its models");
      return stale;
    }
  }
}
