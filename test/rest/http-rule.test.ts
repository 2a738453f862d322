import { describe, expect, it } from "vitest";
import { restServices } from "../../src/server/descriptors.js";
import { compileRestRoutes, findRoute, literalRoutes } from "../../src/server/rest/http-rule.js";
import { libraryService } from "./library-service.js";

const summary = (services = restServices) =>
  compileRestRoutes(services).map((route) => `${route.httpMethod} ${route.template} body=${route.body} -> ${route.method.name}`);

describe("http rules", () => {
  it("neuro-san's routes, exactly the Agent V1 routes of the spec and the temporary networks' come from the descriptors", () => {
    expect(summary().sort()).toEqual([
      "DELETE /api/networks/v1/temporary/{name} body= -> DeleteTemporaryNetwork",
      "GET /.well-known/unyolo-agent body= -> GetDescriptor",
      "GET /api/agent/v1/operations body= -> ListOperations",
      "GET /api/agent/v1/operations/{id} body= -> GetOperation",
      "GET /api/agent/v1/operations/{id}/events body= -> WaitOperation",
      "GET /api/grants body= -> ListGrants",
      "GET /api/grants/{id} body= -> GetGrant",
      "GET /api/networks/v1/temporary body= -> ListTemporaryNetworks",
      "GET /api/networks/v1/temporary/{name} body= -> GetTemporaryNetwork",
      "GET /api/operator/v1/requests body= -> ListRequests",
      "GET /api/operator/v1/requests/{id} body= -> GetRequest",
      "GET /api/v1/list body= -> List",
      "GET /api/v1/{agent_name}/connectivity body= -> Connectivity",
      "GET /api/v1/{agent_name}/function body= -> Function",
      "POST /api/agent/v1/operations body=* -> SubmitOperation",
      "POST /api/agent/v1/operations/{id}/cancel body=* -> CancelOperation",
      "POST /api/grants body=* -> CreateGrant",
      "POST /api/networks/v1/temporary body=* -> CreateTemporaryNetwork",
      "POST /api/operator/v1/requests/{id}/approve body=* -> ApproveRequest",
      "POST /api/operator/v1/requests/{id}/deny body=* -> DenyRequest",
      "POST /api/operator/v1/requests/{id}/revoke body=* -> RevokeRequest",
      "POST /api/v1/{agent_name}/streaming_chat body=* -> StreamingChat",
    ]);
  });

  it("a plain path is looked up as sent, to the route findRoute picks; templates with variables, verbs or dot segments are not", () => {
    const routes = compileRestRoutes([...restServices, libraryService()]);
    const literal = literalRoutes(routes);
    const keys: string[] = [];
    for (const [verb, paths] of literal) {
      for (const [path, match] of paths) {
        keys.push(`${verb} ${path}`);
        expect(match).toEqual(findRoute(routes, verb, path));
      }
    }
    expect(keys).toEqual(expect.arrayContaining(["GET /api/v1/list", "GET /.well-known/unyolo-agent", "POST /api/agent/v1/operations"]));
    expect(keys.some((key) => key.includes("{") || key.includes(":"))).toBe(false);
    // Only a path exactly as its template writes it hits; anything a URL parser would normalize goes to findRoute.
    expect(literal.get("GET")?.get("/api/v1/./list")).toBeUndefined();
    expect(literal.get("GET")?.get("/api/v1/list?x=1")).toBeUndefined();
    expect(literal.get("GET")?.get("/api/v1/list")).toBeDefined();
  });

  it("additional bindings are routes of the same method, and methods without a rule have none", () => {
    const routes = summary([libraryService()]);
    expect(routes.filter((route) => route.endsWith("GetBook"))).toEqual([
      "GET /v1/{name=shelves/*/books/*} body= -> GetBook",
      "GET /v1/books/{name}:peek body= -> GetBook",
    ]);
    expect(routes.some((route) => route.endsWith("Unrouted"))).toBe(false);
  });

  it("a custom rule uses its own kind as the HTTP method", () => {
    const service = libraryService({ pattern: { case: "custom", value: { kind: "search", path: "/v1/books:search" } } });
    expect(summary([service])).toContain("SEARCH /v1/books:search body= -> GetBook");
  });

  it.each([
    [{ pattern: { case: "get" as const, value: "/v1/{missing}" } }, "not a singular scalar field"],
    [{ pattern: { case: "get" as const, value: "/v1/{name" } }, "unbalanced"],
    [{ pattern: { case: "post" as const, value: "/v1/books" }, body: "nope" }, "body field nope does not exist"],
    [{ pattern: { case: "get" as const, value: "/v1/books" }, responseBody: "title" }, "response_body title is not a message field"],
  ])("a rule that cannot be served fails at start-up (%#)", (rule, message) => {
    expect(() => compileRestRoutes([libraryService(rule)])).toThrow(message);
  });

  describe("finding a route", () => {
    const routes = compileRestRoutes(restServices);

    it("finds the rule whose template and method fit", () => {
      const match = findRoute(routes, "get", "/api/v1/math_guy/connectivity");
      expect(match.kind).toBe("found");
      if (match.kind !== "found") return;
      expect(match.route.method.name).toBe("Connectivity");
      expect(Object.fromEntries(match.variables)).toEqual({ agent_name: "math_guy" });
    });

    it("a path no template fits is not ours", () => {
      expect(findRoute(routes, "GET", "/healthz")).toEqual({ kind: "none" });
      expect(findRoute(routes, "GET", "/api/v1/a/b/c")).toEqual({ kind: "none" });
    });

    it("a path that fits with another method names the methods allowed", () => {
      expect(findRoute(routes, "GET", "/api/v1/math_guy/streaming_chat")).toEqual({ kind: "wrong-method", allowedMethods: ["POST"] });
    });
  });
});
