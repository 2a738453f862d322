import http from "node:http";
import OpenAI from "openai";
import { serveParent } from "./server-process.js";

/**
 * The floor a chat is measured against: a bare node:http server that, for each chat request, makes the LLM round
 * trips Axon made for one chat (the same request bodies, one after another, through the same `openai` SDK) and then
 * answers with the json-lines Axon streamed for that chat. What is left between the two is Axon's own work per chat.
 */
export interface ChatBaselineScript {
  path: string;
  contentType: string;
  /** Axon's whole MAXIMAL response to one chat. */
  responseBase64: string;
  /** The chat completion bodies Axon sent for that chat, in order. */
  llmRequests: Record<string, unknown>[];
  /** OPENAI_API_KEY and OPENAI_BASE_URL of the scripted LLM. */
  llmEnv: Record<string, string>;
}

export interface ChatBaselineReady {
  port: number;
}

const script = JSON.parse(process.env.BENCH_CHAT_BASELINE ?? "") as ChatBaselineScript;
const response = Buffer.from(script.responseBase64, "base64");
const llmRequests = script.llmRequests as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming[];
// Constructed as Axon's OpenAiChatClient constructs it, so the SDK does the same work per call.
const sdk = new OpenAI({
  apiKey: script.llmEnv.OPENAI_API_KEY,
  baseURL: script.llmEnv.OPENAI_BASE_URL,
  maxRetries: 3,
  timeout: 60_000,
  logLevel: "off",
  organization: null,
  project: null,
});

async function chat(requestBody: string): Promise<void> {
  JSON.parse(requestBody); // any chat server reads the user's message
  for (const body of llmRequests) {
    const completion = await sdk.chat.completions.create({ ...body, stream: false });
    if (completion.choices[0]?.message === undefined) throw new Error("the scripted LLM answered without a message");
  }
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    if (req.method !== "POST" || req.url !== script.path) return void res.writeHead(404).end();
    chat(Buffer.concat(chunks).toString("utf8")).then(
      () => {
        res.writeHead(200, { "content-type": script.contentType, "content-length": response.length });
        res.end(response);
      },
      (error: unknown) => {
        res.writeHead(500, { "content-type": "text/plain" }).end(String(error));
      },
    );
  });
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));

serveParent({ port: (server.address() as { port: number }).port } satisfies ChatBaselineReady, async () => {
  server.closeAllConnections();
  server.close();
});
