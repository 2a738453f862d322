import type { Logger } from "../logger.js";
import type { AdmissionLimits } from "../operations/admission.js";
import type { Clock } from "../operations/clock.js";
import { CallAdmission } from "./call-admission.js";
import { DailyTokens, type DailyTokenStore } from "./daily-tokens.js";
import { UpstreamModels } from "./upstream-models.js";
import type { Upstreams } from "./upstreams.js";

/** What the `/v1` routes serve from: the upstreams and their model lists, admission, and each client's tokens today. */
export interface Inference {
  upstreams: Upstreams;
  models: UpstreamModels;
  admission: CallAdmission;
  tokens: DailyTokens;
  clock: Clock;
}

export function createInference(options: { upstreams: Upstreams; limits: AdmissionLimits; tokenStore: DailyTokenStore; clock: Clock; logger: Logger }): Inference {
  const { upstreams, limits, tokenStore, clock, logger } = options;
  const tokens = new DailyTokens(tokenStore, clock, logger);
  return { upstreams, models: new UpstreamModels(upstreams, clock, logger), admission: new CallAdmission(limits, tokens, clock), tokens, clock };
}
