import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger, batchedLines } from "../../src/logger.js";
import { until } from "../support/wait.js";

const loggerModule = path.resolve(import.meta.dirname, "../../src/logger.ts");

describe("log lines written in batches", () => {
  it("reach the file in order without waiting for more lines", async () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), "log-lines-")), "axon.log");
    const logger = createLogger("info", batchedLines(file));
    for (let line = 1; line <= 3; line++) logger.info({ line }, "request");
    await until(() => existsSync(file) && readFileSync(file, "utf8").split("\n").length === 4, "three lines in the file");
    expect(readFileSync(file, "utf8").trim().split("\n").map((line) => JSON.parse(line).line)).toEqual([1, 2, 3]);
  });

  it("are all written when the process ends by itself, its loop empty, before their batch is due", () => {
    const script = `
      const { createLogger } = await import(${JSON.stringify(loggerModule)});
      const logger = createLogger("info");
      for (let line = 1; line <= 3; line++) logger.info({ line }, "request");`;
    const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8" });
    expect(out.trim().split("\n").map((line) => JSON.parse(line).line)).toEqual([1, 2, 3]);
  });

  it("are all written when the process exits before their batch is due", () => {
    const script = `
      const { createLogger } = await import(${JSON.stringify(loggerModule)});
      const logger = createLogger("info");
      for (let line = 1; line <= 3; line++) logger.info({ line }, "request");
      process.exit(0);`;
    const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8" });
    expect(out.trim().split("\n").map((line) => JSON.parse(line).line)).toEqual([1, 2, 3]);
  });
});
