import { readFileSync } from "node:fs";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixtureEnv } from "../e2e/expectations.js";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { until } from "../support/wait.js";

const MiB = 1024 * 1024;
const uploads = 300;
const declaredBytes = MiB;
const budgetBytes = 16 * MiB;

/** The server process's resident memory, as the kernel counts it. */
function rssBytes(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) * 1024;
}

/**
 * One unauthenticated upload to an open route (neuro-san's chat) that declares 1 MiB, sends all of it but the last
 * byte and stalls. Resolves once the server has closed the connection.
 */
function stalledUpload(port: number): { closed: Promise<void> } {
  const socket = net.connect(port, "127.0.0.1");
  socket.on("error", () => {});
  // Reading what the server answers is what lets its close be seen.
  socket.resume();
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.once("connect", async () => {
    const head = `POST /api/v1/greeter/streaming_chat HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: ${declaredBytes}\r\n\r\n`;
    const prefix = '{"user_message":{"text":"';
    socket.write(head + prefix);
    const chunk = Buffer.alloc(64 * 1024, "a");
    for (let left = declaredBytes - prefix.length - 1; left > 0 && !socket.destroyed; left -= chunk.length) {
      if (!socket.write(left < chunk.length ? chunk.subarray(0, left) : chunk)) {
        await new Promise((resolve) => {
          socket.once("drain", resolve);
          socket.once("close", resolve);
        });
      }
    }
  });
  return { closed };
}

// A real server process, so that its memory is its own: the test reads it from /proc.
describe("hundreds of stalled unauthenticated uploads against a server process", () => {
  let axon: AxonProcess;
  beforeAll(async () => {
    axon = await startAxonProcess({
      ...fixtureEnv,
      AXON_BODY_TIMEOUT_SECONDS: "5",
      AXON_UNAUTHENTICATED_BODY_BYTES: String(budgetBytes),
    });
  });
  afterAll(async () => {
    await axon?.stop();
  });

  it("hold no more memory than the budget allows, and every socket is closed by the server", async () => {
    const pid = axon.child.pid!;
    const before = rssBytes(pid);
    const connections = Array.from({ length: uploads }, () => stalledUpload(axon.port));
    let closed = 0;
    for (const connection of connections) void connection.closed.then(() => closed++);
    let peak = before;
    // The server answers the uploads past the budget at once (503) and the rest at the body deadline (408).
    await until(
      () => {
        peak = Math.max(peak, rssBytes(pid));
        return closed === uploads;
      },
      `all ${uploads} uploads closed by the server`,
      120_000,
    );
    // 300 bodies of 1 MiB, held, would be 300 MiB on top of everything else; the budget is 16 MiB, the rest is
    // sockets, parsers and garbage, whose share depends on when V8 collects (up to 160 MiB seen on Node 24 from an
    // idle server's 118 MiB).
    expect(peak - before, `RSS ${Math.round(before / MiB)} -> ${Math.round(peak / MiB)} MiB`).toBeLessThan(uploads * declaredBytes * (2 / 3));
    expect((await fetch(`${axon.url}/healthz`)).status).toBe(200);
  }, 180_000);
});
