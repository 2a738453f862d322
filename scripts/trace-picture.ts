// Draws docs/tracing-chat.svg from a real trace: `npx tsx scripts/trace-picture.ts [out.svg]`.
//
// Builds dist/, then runs the chat of test/support/traced-chat.ts: two Axon processes (`node dist/main.js`) exporting
// to a local OTLP receiver, scripted OpenAI-compatible model servers that answer at once, a network whose front man
// calls a coded tool, a sub-agent and the second process's network in one round. The first chat also starts the chat
// threads and loads the model SDK; the second, sent under a trace id of our own, is the one drawn. The timings are
// this machine's.
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { projectRoot } from "../src/project-root.js";
import type { ReceivedSpan } from "../test/support/otlp-receiver.js";
import { chatAcrossTwoProcesses, sendChat, streamingChatSpan } from "../test/support/traced-chat.js";
import { buildServer } from "./build.js";
import { renderWaterfall } from "./trace-waterfall.js";

const output = path.resolve(process.argv[2] ?? path.join(projectRoot, "docs/tracing-chat.svg"));

await buildServer();
const chat = await chatAcrossTwoProcesses();
try {
  const traceId = randomBytes(16).toString("hex");
  await sendChat(chat.caller, { traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01` });
  // A stopped Axon has exported every span it still held.
  await Promise.all([chat.caller.stop(), chat.callee.stop()]);
  const duration = (span: ReceivedSpan | undefined) => (span === undefined ? NaN : Number(span.endNs - span.startNs) / 1e6);
  const serverSpan = (spans: ReceivedSpan[]) => spans.find((span) => span.name === streamingChatSpan && span.service === "caller");
  const spans = chat.receiver.trace(traceId);
  const totalMs = duration(serverSpan(spans));
  if (Number.isNaN(totalMs)) throw new Error("the caller's StreamingChat span did not arrive");
  const firstMs = duration(serverSpan(chat.receiver.spans.filter((span) => span.traceId !== traceId)));
  await writeFile(output, renderWaterfall(spans, `One chat's trace, as recorded: ${spans.length} spans, ${totalMs.toFixed(0)} ms (scripts/trace-picture.ts)`));
  process.stdout.write(`${path.relative(process.cwd(), output)}: ${spans.length} spans, this chat ${totalMs.toFixed(1)} ms, the first chat ${firstMs.toFixed(1)} ms\n`);
} finally {
  await chat.close();
}
