/**
 * google.api.http path templates (google/api/http.proto, "Path template syntax"):
 *
 *     Template = "/" Segments [ Verb ] ;
 *     Segments = Segment { "/" Segment } ;
 *     Segment  = "*" | "**" | LITERAL | Variable ;
 *     Variable = "{" FieldPath [ "=" Segments ] "}" ;
 *     FieldPath = IDENT { "." IDENT } ;
 *     Verb     = ":" LITERAL ;
 *
 * A template is parsed once into flat segments; a variable covers a run of them.
 */

export type TemplateSegment =
  | { readonly kind: "literal"; readonly value: string }
  /** `*`: exactly one segment. */
  | { readonly kind: "segment" }
  /** `**`: zero or more segments; only allowed last. */
  | { readonly kind: "rest" };

export interface TemplateVariable {
  /** The field path as written, e.g. `["book", "name"]` for `{book.name}`. */
  readonly fieldPath: readonly string[];
  /** The index of the variable's first segment in `PathTemplate.segments`. */
  readonly start: number;
  /** One past its last segment. */
  readonly end: number;
}

export interface PathTemplate {
  readonly template: string;
  readonly segments: readonly TemplateSegment[];
  readonly variables: readonly TemplateVariable[];
  readonly verb: string | undefined;
}

/** The values of a matched path's variables, keyed by dotted field path, percent-decoded. */
export type PathVariables = Map<string, string>;

export class PathTemplateError extends Error {
  override readonly name = "PathTemplateError";
}

const identifier = /^[A-Za-z_][A-Za-z0-9_]*$/;
// A literal is any run of URL path characters other than the template's own syntax.
const literal = /^[^/{}*:=]+$/;

export function parsePathTemplate(template: string): PathTemplate {
  if (!template.startsWith("/")) throw new PathTemplateError(`path template must start with "/": ${template}`);
  const { path, verb } = splitVerb(template);
  const segments: TemplateSegment[] = [];
  const variables: TemplateVariable[] = [];

  for (const token of tokenizeSegments(path.slice(1), template)) {
    if (!token.startsWith("{")) {
      segments.push(parseSegment(token, template));
      continue;
    }
    const inner = token.slice(1, -1);
    const equals = inner.indexOf("=");
    const fieldPath = (equals < 0 ? inner : inner.slice(0, equals)).split(".");
    if (!fieldPath.every((part) => identifier.test(part))) {
      throw new PathTemplateError(`invalid field path in ${token}: ${template}`);
    }
    if (variables.some((variable) => variable.fieldPath.join(".") === fieldPath.join("."))) {
      throw new PathTemplateError(`variable ${fieldPath.join(".")} bound twice: ${template}`);
    }
    const start = segments.length;
    const inside = equals < 0 ? "*" : inner.slice(equals + 1);
    for (const part of inside.split("/")) {
      if (part.startsWith("{")) throw new PathTemplateError(`nested variable: ${template}`);
      segments.push(parseSegment(part, template));
    }
    variables.push({ fieldPath, start, end: segments.length });
  }

  const restAt = segments.findIndex((segment) => segment.kind === "rest");
  if (restAt >= 0 && restAt !== segments.length - 1) {
    throw new PathTemplateError(`"**" must be the last segment: ${template}`);
  }
  return { template, segments, variables, verb };
}

/**
 * Matches a URL path (no query, still percent-encoded) against a template. Returns the variables,
 * or undefined when the path does not fit.
 */
export function matchPathTemplate(template: PathTemplate, urlPath: string): PathVariables | undefined {
  const parts = splitUrlPath(urlPath);
  return parts && matchPathParts(template, parts);
}

/** A URL path's segments (still percent-encoded), split once for every template it is matched against. */
export function splitUrlPath(urlPath: string): readonly string[] | undefined {
  return urlPath.startsWith("/") ? urlPath.slice(1).split("/") : undefined;
}

/** `matchPathTemplate` for a path already split by `splitUrlPath`. */
export function matchPathParts(template: PathTemplate, pathParts: readonly string[]): PathVariables | undefined {
  let parts = pathParts;
  if (template.verb !== undefined) {
    const last = parts[parts.length - 1] ?? "";
    const suffix = `:${template.verb}`;
    if (!last.endsWith(suffix)) return undefined;
    parts = [...parts.slice(0, -1), last.slice(0, -suffix.length)];
  }

  const { segments } = template;
  const endsWithRest = segments[segments.length - 1]?.kind === "rest";
  const fixed = endsWithRest ? segments.length - 1 : segments.length;
  if (endsWithRest ? parts.length < fixed : parts.length !== fixed) return undefined;

  for (let index = 0; index < fixed; index++) {
    const segment = segments[index]!;
    const part = parts[index]!;
    if (segment.kind === "literal" ? part !== segment.value : part === "") return undefined;
  }

  const variables: PathVariables = new Map();
  for (const variable of template.variables) {
    const covered = variable.end === segments.length && endsWithRest ? parts.slice(variable.start) : parts.slice(variable.start, variable.end);
    variables.set(variable.fieldPath.join("."), decodeVariable(covered));
  }
  return variables;
}

/**
 * Orders templates so that the most specific is tried first: at the first differing segment a
 * literal beats a wildcard, which beats `**`; then the longer template wins.
 */
export function compareSpecificity(a: PathTemplate, b: PathTemplate): number {
  const rank = (segment: TemplateSegment | undefined): number =>
    segment === undefined ? 3 : segment.kind === "literal" ? 0 : segment.kind === "segment" ? 1 : 2;
  const length = Math.max(a.segments.length, b.segments.length);
  for (let index = 0; index < length; index++) {
    const difference = rank(a.segments[index]) - rank(b.segments[index]);
    if (difference !== 0) return difference;
  }
  return Number(b.verb !== undefined) - Number(a.verb !== undefined);
}

function splitVerb(template: string): { path: string; verb: string | undefined } {
  // A verb follows the last "/" and sits outside any variable.
  const lastSlash = template.lastIndexOf("/");
  const colon = template.indexOf(":", lastSlash);
  if (colon < 0 || template.indexOf("}", colon) >= 0) return { path: template, verb: undefined };
  const verb = template.slice(colon + 1);
  if (!literal.test(verb)) throw new PathTemplateError(`invalid verb: ${template}`);
  return { path: template.slice(0, colon), verb };
}

// Splits on "/" outside braces, so `{name=shelves/*}` stays one token.
function tokenizeSegments(path: string, template: string): string[] {
  const tokens: string[] = [];
  let depth = 0;
  let current = "";
  for (const char of path) {
    if (char === "{") depth++;
    if (char === "}") depth--;
    if (depth > 1) throw new PathTemplateError(`nested variable: ${template}`);
    if (depth < 0) throw new PathTemplateError(`unbalanced braces: ${template}`);
    if (char === "/" && depth === 0) {
      tokens.push(current);
      current = "";
    } else {
      current += char;
    }
  }
  if (depth !== 0) throw new PathTemplateError(`unbalanced braces: ${template}`);
  tokens.push(current);
  return tokens;
}

function parseSegment(token: string, template: string): TemplateSegment {
  if (token === "*") return { kind: "segment" };
  if (token === "**") return { kind: "rest" };
  if (token.startsWith("{") && token.endsWith("}")) throw new PathTemplateError(`nested variable: ${template}`);
  if (!literal.test(token)) throw new PathTemplateError(`invalid segment "${token}": ${template}`);
  return { kind: "literal", value: token };
}

// One segment decodes fully; a multi-segment value keeps "%2F" so its own slashes stay distinguishable
// (http.proto: reserved expansion).
function decodeVariable(parts: readonly string[]): string {
  if (parts.length === 1) return safeDecode(parts[0]!);
  return parts.map((part) => part.split(/%2F/i).map(safeDecode).join("%2F")).join("/");
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
