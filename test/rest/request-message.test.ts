import { toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { AxonError } from "../../src/errors.js";
import { restServices } from "../../src/server/descriptors.js";
import { compileRestRoutes, findRoute } from "../../src/server/rest/http-rule.js";
import { buildRequestMessage } from "../../src/server/rest/request-message.js";
import { libraryService } from "./library-service.js";

const routes = compileRestRoutes([...restServices, libraryService()]);

/** The request JSON a REST call becomes. */
function requestJson(method: string, pathAndQuery: string, body?: unknown) {
  const url = new URL(pathAndQuery, "http://localhost");
  const match = findRoute(routes, method, url.pathname);
  if (match.kind !== "found") throw new Error(`no route for ${method} ${pathAndQuery}`);
  const message = buildRequestMessage(match.route, { variables: match.variables, query: url.searchParams, body: body as never });
  return toJson(match.route.method.input, message);
}

describe("building the request message", () => {
  it("path variables fill their fields", () => {
    expect(requestJson("GET", "/api/v1/math_guy/function")).toEqual({ agent_name: "math_guy" });
    expect(requestJson("GET", "/v1/shelves/s1/books/b1")).toEqual({ name: "shelves/s1/books/b1" });
  });

  it("a nested path variable fills a field inside the body field", () => {
    expect(requestJson("PATCH", "/v1/shelves/s1/books/b1?notify=true", { title: "Dune", name: "ignored" })).toEqual({
      book: { name: "shelves/s1/books/b1", title: "Dune" },
      notify: true,
    });
  });

  it("the whole body is the request when the rule says *, and the path wins over it", () => {
    expect(requestJson("POST", "/api/v1/math_guy/streaming_chat", { agent_name: "other", user_message: { text: "hi" } })).toEqual({
      agent_name: "math_guy",
      user_message: { text: "hi" },
    });
  });

  it("no body on a * rule means an empty request", () => {
    expect(requestJson("POST", "/api/v1/math_guy/streaming_chat", undefined)).toEqual({ agent_name: "math_guy" });
    expect(requestJson("POST", "/api/v1/math_guy/streaming_chat", null)).toEqual({ agent_name: "math_guy" });
  });

  it("a * body that is not an object is an invalid argument", () => {
    expect(() => requestJson("POST", "/api/v1/math_guy/streaming_chat", [1, 2])).toThrow(AxonError);
  });

  it("query parameters fill the fields the path leaves free: nested, repeated, enum names, bools, numbers", () => {
    const json = requestJson(
      "GET",
      "/v1/shelves/s1/books?page_size=25&tags=a&tags=b&include_drafts=TRUE&filter.kind=poetry&filter.min_pages=100&pages=1&pages=2",
    );
    expect(json).toEqual({
      shelf: "s1",
      page_size: 25,
      tags: ["a", "b"],
      include_drafts: true,
      filter: { kind: "POETRY", min_pages: "100" },
      pages: [1, 2],
    });
  });

  it("query parameters cannot override the path, and unknown ones are ignored", () => {
    expect(requestJson("GET", "/v1/shelves/s1/books?shelf=s2&nonsense=1&filter.nope=2")).toEqual({ shelf: "s1" });
  });

  it("a * rule takes nothing from the query", () => {
    expect(requestJson("POST", "/api/v1/math_guy/streaming_chat?agent_name=x&sly_data=y", {})).toEqual({ agent_name: "math_guy" });
  });

  it("a query value of the wrong type names its parameter", () => {
    try {
      requestJson("GET", "/v1/shelves/s1/books?page_size=many&include_drafts=maybe");
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(AxonError);
      expect((error as AxonError).fieldViolations.map((violation) => violation.field)).toEqual(["page_size", "include_drafts"]);
    }
  });
});
