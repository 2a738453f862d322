import { configuredBaseUrl } from "../base-url.js";
import path from "node:path";
import { HoconError, parseHoconFile, type JsonValue } from "../agents/hocon.js";
import { isJsonObject } from "../json.js";
import { globMatches } from "../operations/policy.js";

/**
 * One OpenAI-compatible endpoint of `AXON_INFERENCE_FILE` (the Hugging Face router, OpenAI, Azure OpenAI, vLLM, Ollama,
 * OpenRouter). Its key is not here: it stays in the environment and is read when a call is made.
 */
export interface Upstream {
  name: string;
  /** `base_url` without its trailing slash: `https://router.huggingface.co/v1`. */
  baseUrl: string;
  /** Model name globs this upstream serves; a model goes to the first upstream whose globs match it. */
  models: readonly string[];
  /** The environment variable holding the key. */
  secretEnv: string;
  /** The header the key travels in (`Authorization`; Azure OpenAI's is `api-key`). */
  header: string;
  /** Sent before the key (`Bearer`); undefined = the bare key. */
  scheme: string | undefined;
  /** Added to every URL of this upstream (Azure OpenAI's `api-version`). */
  query: Readonly<Record<string, string>>;
  /** Under `baseUrl`; `{model}` stands for the model's name (Azure OpenAI's `/deployments/{model}/chat/completions`). */
  chatPath: string;
  /** Under `baseUrl`, where the upstream lists its models; undefined = it lists none, and the globs without `*` are listed. */
  modelsPath: string | undefined;
  /** Asks the upstream for usage on every stream (`stream_options.include_usage`), so that streamed tokens are counted. */
  streamUsage: boolean;
  /** How long the upstream may stay silent (before its answer, or between two pieces of it). */
  idleTimeoutSeconds: number;
}

/** A broken inference file: the server does not start with it. */
export class InferenceFileError extends Error {
  override readonly name = "InferenceFileError";
  constructor(
    readonly file: string,
    /** The offending key path (`hf.base_url`), empty for the file as a whole. */
    readonly key: string,
    readonly reason: string,
  ) {
    super(`inference file ${file}${key === "" ? "" : ` at ${key}`}: ${reason}`);
  }
}

/** The configured upstreams, in the file's order. Keys are read from the environment when a call is made. */
export class Upstreams {
  constructor(
    readonly all: readonly Upstream[] = [],
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /** The first upstream whose globs match `model`. */
  route(model: string): Upstream | undefined {
    return this.all.find((upstream) => upstream.models.some((glob) => globMatches(glob, model)));
  }

  /** Read now, not at load: a missing variable fails the calls that need it rather than the server's start. Empty is missing. */
  secretOf(upstream: Upstream): string | undefined {
    const secret = this.env[upstream.secretEnv];
    return secret === undefined || secret === "" ? undefined : secret;
  }
}

/**
 * Reads `AXON_INFERENCE_FILE` (HOCON or JSON): `{ "<name>": { base_url, secret_env, models: [globs], header?, scheme?,
 * query?, chat_path?, models_path?, stream_usage?, idle_timeout_seconds? } }`. No file: no upstreams (only the agent
 * networks are models). A file that is set but missing or invalid throws InferenceFileError naming the key.
 */
export async function loadUpstreams(file: string | undefined, env: NodeJS.ProcessEnv, options: { projectRoot?: string } = {}): Promise<Upstreams> {
  if (file === undefined) return new Upstreams([], env);
  const absoluteFile = path.resolve(file);
  let value;
  try {
    ({ value } = await parseHoconFile(absoluteFile, options.projectRoot === undefined ? {} : { projectRoot: options.projectRoot }));
  } catch (error) {
    if (error instanceof HoconError) throw new InferenceFileError(error.file, "", error.line === undefined ? error.reason : `${error.reason} (line ${error.line})`);
    throw error;
  }
  return new Upstreams(parseUpstreams(value, absoluteFile), env);
}

const UPSTREAM_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;
/** RFC 9110 token: header field names and authentication schemes. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const ENVIRONMENT_VARIABLE = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Headers the key may not travel in: the HTTP client owns them. */
const RESERVED_HEADERS = new Set(["host", "content-length", "content-type", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer", "expect", "accept"]);
const FIELDS = ["base_url", "secret_env", "models", "header", "scheme", "query", "chat_path", "models_path", "stream_usage", "idle_timeout_seconds"];

export function parseUpstreams(document: unknown, file: string): Upstream[] {
  if (!isJsonObject(document)) throw new InferenceFileError(file, "", "the top level must be an object of upstream name -> settings");
  return Object.entries(document).map(([name, entry]) => parseUpstream(file, name, entry));
}

function parseUpstream(file: string, name: string, entry: JsonValue): Upstream {
  const fail = (key: string, reason: string): never => {
    throw new InferenceFileError(file, key === "" ? name : `${name}.${key}`, reason);
  };
  if (!UPSTREAM_NAME.test(name)) fail("", "an upstream name is 1 to 64 letters, digits, dots, dashes or underscores, starting with a letter or digit");
  if (!isJsonObject(entry)) return fail("", "must be an object");
  for (const key of Object.keys(entry)) if (!FIELDS.includes(key)) fail(key, `unknown field (expected ${FIELDS.join(", ")})`);

  const url = configuredBaseUrl(entry.base_url, (reason) => fail("base_url", reason));

  const secretEnv = entry.secret_env;
  if (typeof secretEnv !== "string" || !ENVIRONMENT_VARIABLE.test(secretEnv)) return fail("secret_env", "is required: the name of the environment variable holding the key");

  const models = entry.models;
  if (!Array.isArray(models) || models.length === 0) return fail("models", 'is required: a non-empty list of model names or globs ("Qwen/*")');
  models.forEach((model, index) => {
    if (typeof model !== "string" || model === "") fail(`models[${index}]`, "must be a non-empty string");
  });

  const header = entry.header ?? "Authorization";
  if (typeof header !== "string" || !TOKEN.test(header)) return fail("header", "must be a valid HTTP header name");
  if (RESERVED_HEADERS.has(header.toLowerCase())) fail("header", `${header} is managed by the HTTP client and cannot carry a key`);
  // Bearer is the default only where it belongs: api-key and its kind take the bare key.
  const scheme = entry.scheme === undefined ? (header.toLowerCase() === "authorization" ? "Bearer" : undefined) : entry.scheme;
  if (scheme !== undefined && (typeof scheme !== "string" || !TOKEN.test(scheme))) fail("scheme", "must be an authentication scheme such as Bearer (leave it out to send the bare key)");

  const query = entry.query ?? {};
  if (!isJsonObject(query)) return fail("query", 'must be an object of parameter -> value ({ "api-version": "2024-10-21" })');
  for (const [parameter, value] of Object.entries(query)) if (typeof value !== "string") fail(`query.${parameter}`, "must be a string");

  const chatPath = entry.chat_path ?? "/chat/completions";
  if (typeof chatPath !== "string" || !chatPath.startsWith("/") || /[?#]/.test(chatPath)) return fail("chat_path", "must be a path under base_url, starting with /");

  const modelsPath = entry.models_path === undefined ? "/models" : entry.models_path;
  if (modelsPath !== null && (typeof modelsPath !== "string" || !modelsPath.startsWith("/") || /[?#]/.test(modelsPath))) {
    return fail("models_path", "must be a path under base_url, starting with /, or null when the upstream lists no models");
  }

  const streamUsage = entry.stream_usage ?? true;
  if (typeof streamUsage !== "boolean") return fail("stream_usage", "must be true or false");

  const idleTimeout = entry.idle_timeout_seconds ?? 300;
  if (typeof idleTimeout !== "number" || !Number.isInteger(idleTimeout) || idleTimeout < 1 || idleTimeout > 3600) {
    return fail("idle_timeout_seconds", "must be a whole number of seconds from 1 to 3600");
  }

  return {
    name,
    baseUrl: `${url.origin}${url.pathname.replace(/\/+$/, "")}`,
    models: models as string[],
    secretEnv,
    header,
    scheme: scheme as string | undefined,
    query: query as Record<string, string>,
    chatPath,
    modelsPath: modelsPath ?? undefined,
    streamUsage,
    idleTimeoutSeconds: idleTimeout,
  };
}

/** An upstream URL: `baseUrl` + `route`, with the upstream's query. */
export function upstreamUrl(upstream: Upstream, route: string): URL {
  const url = new URL(upstream.baseUrl + route);
  for (const [parameter, value] of Object.entries(upstream.query)) url.searchParams.set(parameter, value);
  return url;
}

/** Where a chat completion with `model` goes. */
export function chatUrl(upstream: Upstream, model: string): URL {
  return upstreamUrl(upstream, upstream.chatPath.replaceAll("{model}", encodeURIComponent(model)));
}
