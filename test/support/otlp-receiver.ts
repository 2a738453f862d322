import { once } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import protobuf from "protobufjs";

/** One span as the receiver decoded it, whichever protocol carried it; ids in lower-case hex. */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  /** W3C tracestate, as the span's context carried it. */
  traceState: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  startNs: bigint;
  endNs: bigint;
}

/** The part of opentelemetry/proto/collector/trace/v1 a test reads (field numbers as in the .proto files). */
const otlp = protobuf.Root.fromJSON({
  nested: {
    ExportTraceServiceRequest: { fields: { resourceSpans: { rule: "repeated", type: "ResourceSpans", id: 1 } } },
    ResourceSpans: { fields: { resource: { type: "Resource", id: 1 }, scopeSpans: { rule: "repeated", type: "ScopeSpans", id: 2 } } },
    Resource: { fields: { attributes: { rule: "repeated", type: "KeyValue", id: 1 } } },
    ScopeSpans: { fields: { spans: { rule: "repeated", type: "Span", id: 2 } } },
    Span: {
      fields: {
        traceId: { type: "bytes", id: 1 },
        spanId: { type: "bytes", id: 2 },
        traceState: { type: "string", id: 3 },
        parentSpanId: { type: "bytes", id: 4 },
        name: { type: "string", id: 5 },
        kind: { type: "int32", id: 6 },
        startTimeUnixNano: { type: "fixed64", id: 7 },
        endTimeUnixNano: { type: "fixed64", id: 8 },
        attributes: { rule: "repeated", type: "KeyValue", id: 9 },
        status: { type: "Status", id: 15 },
      },
    },
    Status: { fields: { code: { type: "int32", id: 3 } } },
    KeyValue: { fields: { key: { type: "string", id: 1 }, value: { type: "AnyValue", id: 2 } } },
    AnyValue: {
      oneofs: { value: { oneof: ["stringValue", "boolValue", "intValue", "doubleValue", "arrayValue"] } },
      fields: {
        stringValue: { type: "string", id: 1 },
        boolValue: { type: "bool", id: 2 },
        intValue: { type: "int64", id: 3 },
        doubleValue: { type: "double", id: 4 },
        arrayValue: { type: "ArrayValue", id: 5 },
      },
    },
    ArrayValue: { fields: { values: { rule: "repeated", type: "AnyValue", id: 1 } } },
  },
}).lookupType("ExportTraceServiceRequest");

/** Both encodings, after protobufjs's toObject (bytes base64, 64-bit as strings) or OTLP/JSON (ids hex). */
interface WireSpans {
  resourceSpans?: {
    resource?: { attributes?: WireKeyValue[] };
    scopeSpans?: { spans?: WireSpan[] }[];
  }[];
}
interface WireSpan {
  traceId?: string;
  spanId?: string;
  traceState?: string;
  parentSpanId?: string;
  name?: string;
  kind?: number;
  startTimeUnixNano?: string;
  endTimeUnixNano?: string;
  attributes?: WireKeyValue[];
  status?: { code?: number };
}
interface WireKeyValue {
  key: string;
  value?: WireAnyValue;
}
interface WireAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string | number;
  doubleValue?: number;
  arrayValue?: { values?: WireAnyValue[] };
}

/**
 * An OTLP/HTTP trace receiver on 127.0.0.1, port 0: what a collector would get, decoded from http/protobuf or
 * http/json, kept with the encoding each batch came in.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** The content types the batches came with. */
  readonly contentTypes = new Set<string>();
  /** Every batch's raw body, to assert what never appears in any of them. */
  readonly rawBodies: Buffer[] = [];

  private constructor(
    private readonly server: Server,
    /** `http://127.0.0.1:<port>`: OTEL_EXPORTER_OTLP_ENDPOINT. */
    readonly url: string,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    const server = createServer();
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const receiver = new OtlpReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    server.on("request", (request: IncomingMessage, response) => {
      void receiver.receive(request).then(
        () => response.writeHead(200, { "content-type": "application/json" }).end("{}"),
        () => response.writeHead(400).end(),
      );
    });
    return receiver;
  }

  /** The environment that sends a process's traces here. */
  env(protocol: "http/protobuf" | "http/json" = "http/protobuf"): Record<string, string> {
    return { OTEL_EXPORTER_OTLP_ENDPOINT: this.url, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol, OTEL_BSP_SCHEDULE_DELAY: "50" };
  }

  /** The spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.traceId === traceId);
  }

  /** The children of a span, in the order they started. */
  children(parent: ReceivedSpan): ReceivedSpan[] {
    return this.spans.filter((span) => span.parentSpanId === parent.spanId && span.traceId === parent.traceId).sort((a, b) => (a.startNs < b.startNs ? -1 : 1));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, "close");
  }

  private async receive(request: IncomingMessage): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    this.rawBodies.push(body);
    const contentType = request.headers["content-type"] ?? "";
    this.contentTypes.add(contentType);
    const json = contentType.startsWith("application/json");
    const decoded: WireSpans = json
      ? (JSON.parse(body.toString("utf8")) as WireSpans)
      : (otlp.toObject(otlp.decode(body), { bytes: String, longs: String, defaults: false }) as WireSpans);
    const id = (value: string | undefined): string => (value === undefined || value === "" ? "" : json ? value.toLowerCase() : Buffer.from(value, "base64").toString("hex"));
    for (const resourceSpans of decoded.resourceSpans ?? []) {
      const service = String(attributesOf(resourceSpans.resource?.attributes)["service.name"]);
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          this.spans.push({
            service,
            traceId: id(span.traceId),
            spanId: id(span.spanId),
            parentSpanId: id(span.parentSpanId),
            traceState: span.traceState ?? "",
            name: span.name ?? "",
            kind: span.kind ?? 0,
            attributes: attributesOf(span.attributes),
            statusCode: span.status?.code ?? 0,
            startNs: BigInt(span.startTimeUnixNano ?? 0),
            endNs: BigInt(span.endTimeUnixNano ?? 0),
          });
        }
      }
    }
  }
}

function attributesOf(list: WireKeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]));
}

function valueOf(value: WireAnyValue | undefined): unknown {
  if (value === undefined) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}
