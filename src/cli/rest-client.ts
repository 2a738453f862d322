import { failureFromHttpBody } from "./failure.js";
import type { Json } from "./context.js";

/** The REST/JSON surface of one server: every non-2xx answer becomes a ServerFailure from its google.rpc.Status. */
export class RestClient {
  constructor(
    readonly baseUrl: string,
    private readonly token?: string,
  ) {}

  get(route: string, query: Record<string, string | number | undefined> = {}): Promise<Json> {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(query)) if (value !== undefined) search.set(name, String(value));
    const suffix = search.size === 0 ? "" : `?${search.toString()}`;
    return this.call("GET", route + suffix);
  }

  post(route: string, body: Json): Promise<Json> {
    return this.call("POST", route, body);
  }

  /** The raw response of a successful request, for streams (json-lines, Server-Sent Events). */
  async open(method: string, route: string, init: { body?: Json; headers?: Record<string, string>; signal?: AbortSignal } = {}): Promise<Response> {
    const response = await fetch(new URL(route, this.baseUrl), {
      method,
      headers: {
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        ...(init.body === undefined ? {} : { "content-type": "application/json" }),
        ...init.headers,
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      ...(init.signal ? { signal: init.signal } : {}),
    });
    if (!response.ok) throw failureFromHttpBody(response.status, await response.text());
    return response;
  }

  private async call(method: string, route: string, body?: Json): Promise<Json> {
    const response = await this.open(method, route, body === undefined ? {} : { body });
    const text = await response.text();
    return text === "" ? {} : (JSON.parse(text) as Json);
  }
}

/** Lines of a streamed body as they arrive (json-lines, Server-Sent Events). */
export async function* linesOf(response: Response): AsyncGenerator<string> {
  if (!response.body) return;
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of response.body) {
    buffered += decoder.decode(chunk as Uint8Array, { stream: true });
    let newline;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      yield buffered.slice(0, newline).replace(/\r$/, "");
      buffered = buffered.slice(newline + 1);
    }
  }
  buffered += decoder.decode();
  if (buffered !== "") yield buffered;
}
