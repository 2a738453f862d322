import { answerWith, type Answerable, type GitExchange } from "./git-exchange.js";

export const LFS_TYPE = "application/vnd.git-lfs+json";

/** An LFS error as git-lfs reads one (`{message}`), which it prints. */
export function answerLfs(exchange: Answerable, status: number, message: string, headers: Record<string, string> = {}): void {
  answerWith(exchange, status, LFS_TYPE, JSON.stringify({ message: `axon: ${message}` }), headers);
}

/** What the client hears of a host that refused an LFS request: never a 401, which would send git-lfs to its helper. */
export function answerLfsUpstreamFailure(exchange: GitExchange, status: number): void {
  const { record, repository } = exchange;
  record.outcome = "failed";
  record.code = "git_upstream_refused";
  const where = `${repository.owner}/${repository.name} on host ${repository.host.name}`;
  if (status === 404) return answerLfs(exchange, 404, `repository ${where} not found, or it has no LFS`);
  if (status === 401) return answerLfs(exchange, 502, `host ${repository.host.name} refused Axon's credential for ${where}`);
  if (status === 403) return answerLfs(exchange, 403, `host ${repository.host.name} refused access to ${where}`);
  if (status === 422 || status === 413) return answerLfs(exchange, status, `host ${repository.host.name} refused the request (HTTP ${status})`);
  answerLfs(exchange, 502, `host ${repository.host.name} failed (HTTP ${status})`);
}

/** A JSON request body read whole, or undefined when it is larger than `limit`. */
export async function readJsonBody(exchange: GitExchange, limit: number): Promise<unknown> {
  const pieces: Buffer[] = [];
  let size = 0;
  for await (const piece of exchange.req as AsyncIterable<Buffer>) {
    size += piece.length;
    exchange.record.bytesIn += piece.length;
    if (size > limit) throw new LfsRequestError(413, `an LFS request body is at most ${limit} bytes`);
    pieces.push(piece);
  }
  try {
    return JSON.parse(Buffer.concat(pieces).toString("utf8"));
  } catch {
    throw new LfsRequestError(422, "the body is not JSON");
  }
}

/** An LFS request Axon refuses on its face, with the status LFS gives it. */
export class LfsRequestError extends Error {
  override readonly name = "LfsRequestError";
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}
