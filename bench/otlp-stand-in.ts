import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A collector stand-in: takes OTLP/HTTP batches and drops them, so that what a traced Axon pays is the SDK and the
 * export, not a collector's speed. Counts the batches, to show that spans did leave.
 */
export async function startOtlpStandIn(): Promise<{ url: string; batches(): number; close(): void }> {
  let batches = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      batches++;
      response.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    batches: () => batches,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
