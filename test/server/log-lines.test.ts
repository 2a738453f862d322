import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLogger, batchedLines, successLine } from "../../src/logger.js";
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

  it("wait for a reader that falls behind, and reach it whole and in order", async () => {
    // A pipe holds 64 KiB: batches larger than that come back written in part while nobody reads.
    const script = `
      const { createLogger } = await import(${JSON.stringify(loggerModule)});
      const logger = createLogger("info");
      const padding = "x".repeat(200);
      for (let line = 1; line <= 10000; line++) {
        logger.info({ line, padding }, "request");
        if (line % 1000 === 0) await new Promise((resolve) => setImmediate(resolve));
      }`;
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    child.stdout.pause();
    // Nothing is read until the child has filled the pipe and has lines left.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const chunks: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => chunks.push(chunk)).resume();
    const [code] = (await once(child, "close")) as [number];
    expect(code).toBe(0);
    const lines = Buffer.concat(chunks).toString("utf8").trim().split("\n");
    expect(lines.map((line) => JSON.parse(line).line)).toEqual(Array.from({ length: 10000 }, (_, index) => index + 1));
  });
});

describe("a successful call's access line", () => {
  const fields = { request_id: 'id "quoted" \\ é', route: "/pkg.Service/Method", protocol: "rest", code: "OK", ms: 7 };

  // Axon's own ids need no escaping; one from a header may hold quotes, backslashes, tabs and any Latin-1 letter.
  it.each([fields.request_id, "0a1b2c3d-4e5f-4a6b-8c7d-00000000ff01", "tab\there", "\u0001 control", ""])("reads exactly as pino writes the same fields (request id %j)", (requestId) => {
    const lines: string[] = [];
    const logger = createLogger("info", { write: (line: string) => void lines.push(line) });
    successLine(logger, fields.route, fields.protocol)(requestId, fields.ms);
    logger.info({ ...fields, request_id: requestId }, "request");
    // The two lines may fall in different milliseconds.
    const [ours, pinos] = lines.map((line) => line.replace(/"time":"[^"]*"/, '"time":""'));
    expect(ours).toBe(pinos);
    expect(JSON.parse(lines[0]!)).toMatchObject({ ...fields, request_id: requestId, level: 30, service: "axon", msg: "request" });
  });

  it("is not written below the logger's level", () => {
    const lines: string[] = [];
    successLine(createLogger("warn", { write: (line: string) => void lines.push(line) }), fields.route, fields.protocol)(fields.request_id, 1);
    expect(lines).toEqual([]);
  });
});
