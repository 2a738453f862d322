import path from "node:path";
import { startAxon } from "../src/axon.js";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/logger.js";
import { serveParent } from "./server-process.js";

/** Axon as `npm start` runs it (the repository's manifest, no LLM), on 127.0.0.1 and a free port. */
const projectRoot = path.resolve(import.meta.dirname, "..");
const config = {
  ...loadConfig({ AGENT_HTTP_PORT: "0", LOG_LEVEL: "silent", AXON_SHUTDOWN_GRACE_SECONDS: "1" }, projectRoot),
  host: "127.0.0.1",
};
const axon = await startAxon(config, createLogger("silent"), { env: {} });

export interface AxonReady {
  port: number;
}

serveParent({ port: axon.server.ports[0]! } satisfies AxonReady, () => axon.close());
