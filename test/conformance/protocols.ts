import { envelope } from "../support/envelopes.js";
import { connectStreamOutcome, connectUnaryOutcome, grpcOutcome, grpcWebOutcome, H2Client, sendH1, type Outcome, type RawRequest, type Wire } from "./wire.js";

/**
 * Every way the server can be called, as the conformance cases name them: the protocol, its codec, the HTTP version,
 * and whether its messages travel in envelopes (gRPC, gRPC-Web, Connect streams) or as the body (Connect unary).
 */
export interface Protocol {
  readonly name: string;
  readonly wire: Wire;
  readonly contentType: string;
  readonly codec: "proto" | "json";
  readonly enveloped: boolean;
  /** gRPC-Web's text mode: the enveloped body travels base64-encoded, both ways. */
  readonly text?: boolean;
  readonly outcome: (response: Parameters<typeof grpcOutcome>[0]) => Outcome;
  /** Where the timeout travels, and how a timeout in milliseconds is written. */
  readonly timeout: (ms: number) => Record<string, string>;
}

const grpcTimeout = (ms: number) => ({ "grpc-timeout": `${ms}m` });
const connectTimeout = (ms: number) => ({ "connect-timeout-ms": String(ms) });

function grpc(name: string, contentType: string, codec: "proto" | "json"): Protocol {
  return { name, wire: "h2", contentType, codec, enveloped: true, outcome: grpcOutcome, timeout: grpcTimeout };
}
function grpcWeb(wire: Wire, codec: "proto" | "json", text = false): Protocol {
  const contentType = text ? "application/grpc-web-text+proto" : `application/grpc-web+${codec}`;
  return { name: `gRPC-Web${text ? " text" : ""} ${codec} over ${wire}`, wire, contentType, codec, enveloped: true, text, outcome: (response) => grpcWebOutcome(response, text), timeout: grpcTimeout };
}
function connectUnary(wire: Wire, codec: "proto" | "json"): Protocol {
  return { name: `Connect unary ${codec} over ${wire}`, wire, contentType: `application/${codec}`, codec, enveloped: false, outcome: connectUnaryOutcome, timeout: connectTimeout };
}
function connectStream(wire: Wire, codec: "proto" | "json"): Protocol {
  return { name: `Connect stream ${codec} over ${wire}`, wire, contentType: `application/connect+${codec}`, codec, enveloped: true, outcome: connectStreamOutcome, timeout: connectTimeout };
}

/** The protocols that carry unary calls (the first is the gRPC fast path, the Connect unary ones the Connect fast path). */
export const unaryProtocols: readonly Protocol[] = [
  grpc("gRPC proto", "application/grpc", "proto"),
  grpc("gRPC +proto", "application/grpc+proto", "proto"),
  grpc("gRPC JSON", "application/grpc+json", "json"),
  grpcWeb("h1", "proto"),
  grpcWeb("h2", "proto"),
  grpcWeb("h1", "json"),
  grpcWeb("h1", "proto", true),
  grpcWeb("h2", "proto", true),
  connectUnary("h1", "proto"),
  connectUnary("h2", "proto"),
  connectUnary("h1", "json"),
  connectUnary("h2", "json"),
];

/** The protocols that carry server streams. */
export const streamProtocols: readonly Protocol[] = [
  grpc("gRPC proto", "application/grpc", "proto"),
  grpc("gRPC JSON", "application/grpc+json", "json"),
  grpcWeb("h1", "proto"),
  grpcWeb("h2", "proto"),
  grpcWeb("h1", "proto", true),
  grpcWeb("h2", "json"),
  connectStream("h1", "json"),
  connectStream("h2", "proto"),
];

export interface CallRequest {
  path: string;
  /** The request messages, each already in the protocol's codec; framed in envelopes where the protocol does. */
  messages?: Buffer[];
  /** The body exactly as given, instead of `messages`. */
  body?: Buffer;
  headers?: Record<string, string>;
  method?: string;
  resetBeforeEnd?: boolean;
}

/** Calls the server on `protocol` with one client per HTTP version, shared by every case of a file. */
export class ConformanceClient {
  private readonly h2: H2Client;

  constructor(private readonly url: string) {
    this.h2 = new H2Client(url);
  }

  async call(protocol: Protocol, request: CallRequest): Promise<Outcome> {
    let body = request.body ?? Buffer.concat((request.messages ?? []).map((message) => (protocol.enveloped ? envelope(0, message) : message)));
    if (protocol.text) body = Buffer.from(body.toString("base64"));
    const raw: RawRequest = {
      path: request.path,
      method: request.method ?? "POST",
      headers: { "content-type": protocol.contentType, ...(protocol.wire === "h2" && protocol.contentType.startsWith("application/grpc") ? { te: "trailers" } : {}), ...request.headers },
      body,
      ...(request.resetBeforeEnd ? { resetBeforeEnd: true } : {}),
    };
    const response = protocol.wire === "h2" ? await this.h2.send(raw) : await sendH1(this.url, raw);
    return protocol.outcome(response);
  }

  close(): void {
    this.h2.close();
  }
}
