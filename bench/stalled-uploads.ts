import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { machine } from "./machine.js";

/*
 * `npx tsx bench/stalled-uploads.ts`: the hostile-intake probe of issue 13 as a measurement. Starts `node dist/main.js`,
 * opens N unauthenticated uploads to an open route (neuro-san's REST chat), each declaring a body of `--declared` bytes,
 * sending all of it but the last byte and then stalling; prints the server's RSS before, at the peak, and how many of
 * the sockets the server had closed after `--hold` seconds.
 */

const { values: flags } = parseArgs({
  options: {
    uploads: { type: "string", default: "150" },
    declared: { type: "string", default: String(4 * 1024 * 1024) },
    hold: { type: "string", default: "40" },
  },
});
const uploads = Number(flags.uploads);
const declared = Number(flags.declared);
const holdMs = Number(flags.hold) * 1000;

const child = spawn(process.execPath, ["dist/main.js"], {
  env: { ...process.env, AGENT_HTTP_PORT: "0", AXON_HOST: "127.0.0.1", LOG_LEVEL: "info", AXON_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), "axon-bench-")) },
  stdio: ["ignore", "pipe", "inherit"],
});
const port = await new Promise<number>((resolve) => {
  createInterface({ input: child.stdout! }).on("line", (line) => {
    const match = /"url":"http:\/\/localhost:(\d+)"/.exec(line);
    if (match) resolve(Number(match[1]));
  });
});
const rssMiB = (): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))![1]) / 1024;
await new Promise((resolve) => setTimeout(resolve, 1000));
const before = rssMiB();

const chunk = Buffer.alloc(64 * 1024, "a");
let closedByServer = 0;
let sentFully = 0;
const sockets: net.Socket[] = [];
const started = performance.now();
await Promise.all(
  Array.from({ length: uploads }, () =>
    new Promise<void>((resolve) => {
      const socket = net.connect(port, "127.0.0.1", async () => {
        socket.write(`POST /api/v1/greeter/streaming_chat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n{"user_message":{"text":"`);
        let left = declared - 27;
        while (left > 1 && !socket.destroyed) {
          const piece = chunk.subarray(0, Math.min(chunk.length, left - 1));
          left -= piece.length;
          if (!socket.write(piece)) await new Promise((drained) => { socket.once("drain", drained); socket.once("close", drained); });
        }
        if (!socket.destroyed) sentFully++;
        resolve();
      });
      socket.on("error", () => {});
      socket.resume(); // reads what the server answers, so its close is seen
      socket.on("close", () => {
        closedByServer++;
        resolve();
      });
      sockets.push(socket);
    }),
  ),
);
const sentMs = performance.now() - started;
let peak = rssMiB();
const until = performance.now() + holdMs;
while (performance.now() < until && closedByServer < uploads) {
  await new Promise((resolve) => setTimeout(resolve, 250));
  peak = Math.max(peak, rssMiB());
}
console.log(JSON.stringify({ uploads, declared, rssBeforeMiB: Math.round(before), rssPeakMiB: Math.round(peak), sentFully, sentMs: Math.round(sentMs), closedByServer, heldSeconds: Math.round((performance.now() - started) / 1000), loadavg: os.loadavg().map((x) => x.toFixed(2)), machine: machine() }));
for (const socket of sockets) socket.destroy();
child.kill("SIGTERM");
