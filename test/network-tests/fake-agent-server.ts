import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A stand-in for an agent server's REST StreamingChat: just enough of the json-lines protocol to drive the runner.
 * The agent name picks the behaviour:
 *   echo     answers "echo: <text> (turn N)", N counted from the chat_context sent back; returns the request's
 *            sly_data plus {turn, nested}, a structure, and a chat_context. Under MAXIMAL it streams notes first.
 *   counter  answers with how many requests it has had: "1", "2", ...
 *   broken   starts the stream, then sends a google.rpc.Status line
 *   silent   ends the stream without an AGENT_FRAMEWORK message
 *   teapot   answers 500 with a plain-text body
 *   hang     sends the headers and never finishes (records the client closing)
 *   anything else: 404 with a google.rpc.Status body
 */
export interface FakeAgentServer {
  url: string;
  requests: { agent: string; headers: IncomingHttpHeaders; body: ChatRequestBody }[];
  /** Hanging chats whose client went away. */
  closedHangs: number;
  close(): Promise<void>;
}

export interface ChatRequestBody {
  user_message?: { text?: string };
  sly_data?: Record<string, unknown>;
  chat_filter?: { chat_filter_type?: string };
  chat_context?: { chat_histories?: { messages?: { type?: string; text?: string }[] }[] };
}

export async function startFakeAgentServer(): Promise<FakeAgentServer> {
  let counter = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const agent = /^\/api\/v1\/([^/]+)\/streaming_chat$/.exec(request.url ?? "")?.[1] ?? "";
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ChatRequestBody;
      fake.requests.push({ agent, headers: request.headers, body });
      switch (agent) {
        case "echo":
          return echo(body, response);
        case "counter":
          return streamLines(response, [finalMessage({ text: String(++counter) })]);
        case "broken":
          return streamLines(response, [
            { response: { type: "AGENT", text: "working", origin: [{ tool: "Front", instantiation_index: 1 }] } },
            { code: 14, message: "the network failed midway", details: [errorInfo("NETWORK_FAILED")] },
          ]);
        case "silent":
          return streamLines(response, [{ response: { type: "AGENT", text: "thinking" } }]);
        case "teapot":
          response.writeHead(500, { "content-type": "text/plain" }).end("boom");
          return;
        case "hang":
          response.writeHead(200, { "content-type": "application/json-lines" });
          response.flushHeaders();
          response.on("close", () => fake.closedHangs++);
          return;
        default:
          response
            .writeHead(404, { "content-type": "application/json" })
            .end(JSON.stringify({ code: 5, message: `No agent named ${agent}`, details: [errorInfo("AGENT_NOT_FOUND")] }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const fake: FakeAgentServer = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: [],
    closedHangs: 0,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return fake;
}

function echo(body: ChatRequestBody, response: ServerResponse): void {
  const text = body.user_message?.text ?? "";
  const history = body.chat_context?.chat_histories?.[0]?.messages ?? [];
  const turn = history.filter((message) => message.type === "HUMAN").length + 1;
  const answer = `echo: ${text} (turn ${turn})`;
  const final = finalMessage({
    text: answer,
    sly_data: { ...body.sly_data, turn, nested: { depth: { turn } } },
    structure: { answer, turn },
    chat_context: {
      chat_histories: [
        {
          origin: [{ tool: "Echo", instantiation_index: 1 }],
          messages: [...history, { type: "HUMAN", text }, { type: "AI", text: answer }],
        },
      ],
    },
  });
  const maximal = body.chat_filter?.chat_filter_type === "MAXIMAL";
  streamLines(
    response,
    maximal
      ? [
          { response: { type: "AGENT", text: "calling a tool", origin: [{ tool: "Echo", instantiation_index: 1 }] } },
          // An external agent's own answer, relayed with its origin: not the final answer.
          { response: { type: "AGENT_FRAMEWORK", text: "from a sub-network", origin: [{ tool: "/other", instantiation_index: 1 }] } },
          final,
        ]
      : [final],
  );
}

function finalMessage(fields: Record<string, unknown>): Record<string, unknown> {
  return { response: { type: "AGENT_FRAMEWORK", ...fields } };
}

/** One JSON object per line, a blank line in between (clients skip them), each flushed separately. */
function streamLines(response: ServerResponse, lines: unknown[]): void {
  response.writeHead(200, { "content-type": "application/json-lines" });
  for (const line of lines) response.write(`${JSON.stringify(line)}\n\n`);
  response.end();
}

function errorInfo(reason: string): Record<string, unknown> {
  return { "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason, domain: "fake.test" };
}
