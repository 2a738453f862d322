import { Code, ConnectError, createContextKey, type ContextValues, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import type { UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeFromHttpStatus } from "@connectrpc/connect/protocol-connect";
import { protocolKey, socketKey } from "../context.js";
import { toConnectError } from "../status.js";
import type { BodyTally, ClosingRequest } from "../intake-budget.js";
import type { Call, CallPipeline } from "./call-pipeline.js";
import { isStrictService, strictResponseHeaders } from "../strict/contract.js";

interface OpenCall {
  readonly call: Call;
  /** connect-node writes a gRPC and gRPC-Web outcome here, even one it reached before any interceptor ran. */
  readonly trailer: Headers;
}

const openCallKey = createContextKey<OpenCall | undefined>(undefined, { description: "the pipeline's call" });

/**
 * What connect-node's routes (Connect streams and GET, gRPC-Web, gRPC streams) need to meet the same call pipeline as
 * the fast paths: a request gate that opens the call on its headers before connect-node reads any body, and an
 * interceptor that maps what the implementation throws and finishes the call when its answer (or stream) ends.
 */
export function connectPipeline(pipeline: CallPipeline): {
  requestGate: (context: HandlerContext) => Promise<void>;
  interceptor: Interceptor;
  /** After the response went out: finishes a call connect-node refused before any interceptor ran (a bad body, say). */
  finishRefused: (values: ContextValues, response: UniversalServerResponse) => void;
  /** The body connect-node reads, counted against the intake budget when the gate found no principal. */
  meteredBody: (values: ContextValues, request: ClosingRequest, body: AsyncIterable<Uint8Array>) => AsyncIterable<Uint8Array>;
} {
  return {
    async requestGate(context) {
      const call = await pipeline.begin({
        method: context.method,
        protocol: context.values.get(protocolKey),
        header: (name) => context.requestHeader.get(name) ?? undefined,
        values: context.values,
        socket: context.values.get(socketKey),
      });
      context.values.set(openCallKey, { call, trailer: context.responseTrailer });
      // A call whose client went away before any answer (a stream reset while its request was arriving) ends here:
      // connect-node may never finish writing to the closed stream. Every other outcome is finished where it is known.
      context.signal.addEventListener(
        "abort",
        () => {
          const reason = abortReason(context.signal);
          if (reason.code === Code.Canceled) call.finish(reason);
        },
        { once: true },
      );
      context.responseHeader.set("x-request-id", call.requestId);
      if (isStrictService(context.service)) for (const [name, value] of Object.entries(strictResponseHeaders)) context.responseHeader.set(name, value);
      if (call.refusal !== undefined) throw call.refusal;
    },

    interceptor: (next) => async (request) => {
      const { call } = request.contextValues.get(openCallKey)!;
      let response;
      try {
        response = await call.run(() => next(request));
      } catch (error) {
        throw call.finish(error);
      }
      // An implementation may answer after its signal aborted (a long poll returns what it has): the call has failed
      // by then (deadline, cancel, shutdown), and connect-node would send the answer as OK.
      if (request.signal.aborted) throw call.finish(abortReason(request.signal));
      if (!response.stream) {
        call.finish();
        return response;
      }
      call.streamStarted();
      const messages = call.bind(response.message);
      return {
        ...response,
        message: (async function* () {
          let failure: unknown;
          try {
            yield* messages;
            if (request.signal.aborted) throw abortReason(request.signal);
          } catch (error) {
            failure = error;
            throw call.finish(error);
          } finally {
            call.finish(failure ?? (request.signal.aborted ? abortReason(request.signal) : undefined));
          }
        })(),
      };
    },

    async *meteredBody(values, request, body) {
      // The gate has run before connect-node reads the first chunk: the call knows its principal by then.
      let tally: BodyTally | undefined;
      try {
        for await (const chunk of body) {
          tally ??= values.get(openCallKey)?.call.bodyTally(request);
          try {
            tally?.add(chunk.byteLength);
          } catch (error) {
            // connect-node answers a ConnectError as it is; anything else would become INTERNAL.
            throw toConnectError(error);
          }
          yield chunk;
        }
      } finally {
        tally?.release();
      }
    },

    finishRefused(values, response) {
      const open = values.get(openCallKey);
      if (open === undefined) return;
      const grpcStatus = open.trailer.get("grpc-status") ?? response.trailer?.get("grpc-status");
      const code = grpcStatus !== null && grpcStatus !== undefined ? Number(grpcStatus) : response.status === 200 ? 0 : codeFromHttpStatus(response.status);
      open.call.finish(code === 0 ? undefined : new ConnectError("refused by the protocol layer", code in Code ? (code as Code) : Code.Unknown));
    },
  };
}

/** Why connect-node aborted a call: its deadline, the shutdown, or (anything else) the client went away. */
function abortReason(signal: AbortSignal): ConnectError {
  const reason: unknown = signal.reason;
  return reason instanceof ConnectError ? reason : new ConnectError("the client cancelled the call", Code.Canceled);
}
