import http from "node:http";
import type { AddressInfo } from "node:net";
import { serveParent } from "./server-process.js";

/**
 * An OpenAI-compatible upstream that costs as little as it can, in its own process: a chat completion is answered with
 * bytes made once, as JSON or as `BENCH_CHUNKS` stream chunks (then the usage chunk and `[DONE]`), one chunk a timer
 * tick so that each arrives on its own, as a model's tokens do.
 */
export interface UpstreamReady {
  port: number;
  key: string;
}

export const benchKey = "hf_bench_0123456789abcdef0123456789abcdef";
const chunkCount = Number(process.env.BENCH_CHUNKS ?? "100");
const base = { id: "chatcmpl-bench", created: 1_700_000_000, model: "bench/model" };
const event = (json: unknown) => Buffer.from(`data: ${JSON.stringify(json)}\n\n`);
const chunks = Array.from({ length: chunkCount }, (_, index) =>
  event({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: `token${index} ` }, logprobs: null, finish_reason: null }] }),
);
const usage = { prompt_tokens: 12, completion_tokens: chunkCount, total_tokens: 12 + chunkCount };
const usageChunk = event({ ...base, object: "chat.completion.chunk", choices: [], usage });
const done = Buffer.from("data: [DONE]\n\n");
const answer = Buffer.from(
  JSON.stringify({ ...base, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "token0 token1" }, finish_reason: "stop" }], usage }),
);

const server = http.createServer((req, res) => {
  const pieces: Buffer[] = [];
  req.on("data", (piece: Buffer) => pieces.push(piece));
  req.on("end", () => {
    if (req.headers.authorization !== `Bearer ${benchKey}`) return void res.writeHead(401).end();
    const body = JSON.parse(Buffer.concat(pieces).toString()) as { stream?: boolean; stream_options?: { include_usage?: boolean } };
    if (!body.stream) return void res.writeHead(200, { "content-type": "application/json", "content-length": String(answer.byteLength) }).end(answer);
    res.writeHead(200, { "content-type": "text/event-stream" });
    let next = 0;
    const send = () => {
      if (next < chunks.length) {
        res.write(chunks[next++]);
        return void setTimeout(send, 0);
      }
      if (body.stream_options?.include_usage) res.write(usageChunk);
      res.end(done);
    };
    send();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  serveParent({ port: (server.address() as AddressInfo).port, key: benchKey } satisfies UpstreamReady, () => new Promise((resolve) => server.close(() => resolve())));
});
