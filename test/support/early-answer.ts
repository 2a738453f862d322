import http from "node:http";

/**
 * Sends a request's headers and the first byte of a 1 MB body it declares, and resolves with the answer: a server that
 * answers before reading the body answers here, one that waits for the body never does (the test then times out).
 */
export function answerBeforeBody(url: string, options: { method: string; headers?: Record<string, string> }): Promise<{ status: number; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: options.method, headers: { ...options.headers, "content-length": String(1_000_000) } }, (response) => {
      response.resume();
      resolve({ status: response.statusCode!, connection: response.headers.connection });
      request.destroy();
    });
    request.on("error", (error) => (request.destroyed ? undefined : reject(error)));
    request.write("{");
  });
}
