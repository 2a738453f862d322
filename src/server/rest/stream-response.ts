import { fromBinary, toJson, type DescMethod } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import { pipe, transformSplitEnvelope, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import { endStreamFlag, endStreamFromJson } from "@connectrpc/connect/protocol-connect";
import { typeRegistry } from "../descriptors.js";
import { statusJson, toConnectError } from "../status.js";
import { errorOfConnectResponse, readAllBytes } from "./connect-response.js";
import { writeStatusError, type ResponseSink } from "./http-response.js";
import type { JsonLinesWriter } from "./json-lines-writer.js";

// The router already limits what it sends; this only bounds a single envelope we buffer.
const maxEnvelopeBytes = 0xffffffff;

/**
 * Turns a Connect server stream into json-lines. An error before the stream started is a plain HTTP
 * error; after it, one more line holding the google.rpc.Status, then the end.
 */
export async function writeStreamResponse(options: {
  res: ResponseSink;
  method: DescMethod;
  response: UniversalServerResponse;
  writer: JsonLinesWriter;
  signal: AbortSignal;
}): Promise<void> {
  const { res, method, response, writer, signal } = options;
  if (response.status !== 200) {
    const body = await readAllBytes(response.body);
    return fail(errorOfConnectResponse(response.status, body, response.header));
  }

  async function fail(error: ConnectError): Promise<void> {
    if (signal.aborted) return;
    if (writer.started) {
      await writer.writeLine(statusJson(error));
      writer.end();
    } else {
      writeStatusError(res, error, { headers: response.header });
    }
  }

  try {
    for await (const envelope of pipe(response.body ?? noBytes(), transformSplitEnvelope(maxEnvelopeBytes))) {
      if (signal.aborted) break;
      if ((envelope.flags & endStreamFlag) === endStreamFlag) {
        const { error } = endStreamFromJson(envelope.data);
        if (error !== undefined) return await fail(error);
        break;
      }
      writer.start(response.header);
      await writer.writeLine(toJson(method.output, fromBinary(method.output, envelope.data), { registry: typeRegistry }));
    }
  } catch (error) {
    return fail(toConnectError(error));
  }
  // A stream that ended cleanly is a 200 even when it carried no message.
  writer.start(response.header);
  writer.end();
}

async function* noBytes(): AsyncIterable<Uint8Array> {}
