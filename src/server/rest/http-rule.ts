import { hasOption, getOption, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../gen/google/api/http_pb.js";
import { resolveFieldPath } from "./field-path.js";
import { compareSpecificity, matchPathParts, parsePathTemplate, splitUrlPath, type PathTemplate, type PathVariables } from "./path-template.js";

/** One REST binding of an RPC: a `google.api.http` rule or one of its `additional_bindings`. */
export interface RestRoute {
  /** Upper case: GET, POST, ... or a custom verb. */
  readonly httpMethod: string;
  readonly template: string;
  readonly method: DescMethod;
  /** `""` (no body: the rest comes from the query), `"*"` (the whole request) or a top-level field name. */
  readonly body: string;
  /** `""` (the whole response message) or the top-level field whose value is the HTTP body. */
  readonly responseBody: string;
  readonly pathTemplate: PathTemplate;
}

export type RouteMatch =
  | { readonly kind: "none" }
  | { readonly kind: "wrong-method"; readonly allowedMethods: readonly string[] }
  | { readonly kind: "found"; readonly route: RestRoute; readonly variables: PathVariables };

/**
 * Reads the http rules of every method, once, at start-up. A rule this transcoder cannot serve
 * faithfully (bad template, unknown field, client streaming, a response_body that is no message field) fails start-up instead of
 * misbehaving on the first request. Routes come back most specific first.
 */
export function compileRestRoutes(services: readonly DescService[]): RestRoute[] {
  return readRestBindings(services).sort((a, b) => compareSpecificity(a.pathTemplate, b.pathTemplate));
}

/** The same routes in declaration order: service, method, then the rule before its additional bindings. */
export function readRestBindings(services: readonly DescService[]): RestRoute[] {
  const routes: RestRoute[] = [];
  for (const service of services) {
    for (const method of service.methods) {
      if (!hasOption(method, http)) continue;
      const rule = getOption(method, http);
      for (const binding of [rule, ...rule.additionalBindings]) routes.push(compileBinding(method, binding));
    }
  }
  return routes;
}

/**
 * The routes whose template is a plain path, by verb and path: a request for one (most calls: `GET /api/v1/list`)
 * finds its match by looking up the path as sent, with no URL to parse and no templates to try. Most specific
 * first, so the route kept for a verb and path is the one `findRoute` would pick.
 */
export function literalRoutes(routes: readonly RestRoute[]): ReadonlyMap<string, ReadonlyMap<string, RouteMatch>> {
  const literal = new Map<string, Map<string, RouteMatch>>();
  for (const route of routes) {
    if (!isLiteralPath(route.pathTemplate)) continue;
    let paths = literal.get(route.httpMethod);
    if (paths === undefined) literal.set(route.httpMethod, (paths = new Map()));
    if (!paths.has(route.template)) paths.set(route.template, { kind: "found", route, variables: new Map() });
  }
  return literal;
}

// Unreserved characters and no dot segments: the path as sent is the pathname a URL parser would make of it.
function isLiteralPath(template: PathTemplate): boolean {
  return template.variables.length === 0 && template.verb === undefined && template.segments.every((segment) => segment.kind === "literal" && unreservedSegment.test(segment.value));
}

const unreservedSegment = /^(?!\.\.?$)[A-Za-z0-9._~-]+$/;

/** The first route whose template fits the path and whose HTTP method is the request's. */
export function findRoute(routes: readonly RestRoute[], httpMethod: string, urlPath: string): RouteMatch {
  const allowedMethods = new Set<string>();
  const parts = splitUrlPath(urlPath);
  if (parts === undefined) return { kind: "none" };
  for (const route of routes) {
    const variables = matchPathParts(route.pathTemplate, parts);
    if (variables === undefined) continue;
    if (route.httpMethod === httpMethod.toUpperCase()) return { kind: "found", route, variables };
    allowedMethods.add(route.httpMethod);
  }
  return allowedMethods.size === 0 ? { kind: "none" } : { kind: "wrong-method", allowedMethods: [...allowedMethods] };
}

function compileBinding(method: DescMethod, rule: HttpRule): RestRoute {
  const where = `${method.parent.typeName}.${method.name}`;
  const pattern = rule.pattern;
  if (pattern.case === undefined) throw new Error(`${where}: http rule has no pattern`);
  const [httpMethod, template] =
    pattern.case === "custom" ? [pattern.value.kind.toUpperCase(), pattern.value.path] : [pattern.case.toUpperCase(), pattern.value];

  if (method.methodKind === "client_streaming" || method.methodKind === "bidi_streaming") {
    throw new Error(`${where}: REST transcoding of client streams is not supported`);
  }
  const responseField = method.output.fields.find((field) => field.name === rule.responseBody);
  if (rule.responseBody !== "" && responseField?.fieldKind !== "message") {
    throw new Error(`${where}: response_body ${rule.responseBody} is not a message field of the response`);
  }

  const pathTemplate = parsePathTemplate(template);
  for (const variable of pathTemplate.variables) {
    const fields = resolveFieldPath(method.input, variable.fieldPath);
    const leaf = fields?.[fields.length - 1];
    if (leaf === undefined || (leaf.fieldKind !== "scalar" && leaf.fieldKind !== "enum")) {
      throw new Error(`${where}: path variable ${variable.fieldPath.join(".")} is not a singular scalar field`);
    }
  }
  if (rule.body !== "" && rule.body !== "*" && !method.input.fields.some((field) => field.name === rule.body)) {
    throw new Error(`${where}: body field ${rule.body} does not exist`);
  }
  return { httpMethod, template, method, body: rule.body, responseBody: rule.responseBody, pathTemplate };
}
