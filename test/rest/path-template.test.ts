import { describe, expect, it } from "vitest";
import { compareSpecificity, matchPathTemplate, parsePathTemplate, PathTemplateError } from "../../src/server/rest/path-template.js";

const match = (template: string, path: string) => {
  const variables = matchPathTemplate(parsePathTemplate(template), path);
  return variables === undefined ? undefined : Object.fromEntries(variables);
};

describe("path templates", () => {
  it("a literal template matches exactly its own path", () => {
    expect(match("/api/v1/list", "/api/v1/list")).toEqual({});
    expect(match("/api/v1/list", "/api/v1/list/")).toBeUndefined();
    expect(match("/api/v1/list", "/api/v1")).toBeUndefined();
    expect(match("/api/v1/list", "/api/v2/list")).toBeUndefined();
  });

  it("a variable captures one segment, percent-decoded", () => {
    expect(match("/api/v1/{agent_name}/function", "/api/v1/math_guy/function")).toEqual({ agent_name: "math_guy" });
    expect(match("/api/v1/{agent_name}/function", "/api/v1/hello%20world%2Fx/function")).toEqual({ agent_name: "hello world/x" });
    expect(match("/api/v1/{agent_name}/function", "/api/v1/a/b/function")).toBeUndefined();
  });

  it("a variable never matches an empty segment", () => {
    expect(match("/api/v1/{agent_name}/function", "/api/v1//function")).toBeUndefined();
  });

  it("a variable may name a nested field", () => {
    expect(match("/v1/books/{book.name}", "/v1/books/dune")).toEqual({ "book.name": "dune" });
  });

  it("a variable with segments captures all of them, keeping its own slashes", () => {
    const template = "/v1/{name=shelves/*/books/*}";
    expect(match(template, "/v1/shelves/s1/books/b%2F2")).toEqual({ name: "shelves/s1/books/b%2F2" });
    expect(match(template, "/v1/shelves/s1/books")).toBeUndefined();
    expect(match(template, "/v1/racks/s1/books/b2")).toBeUndefined();
  });

  it("** matches zero or more trailing segments", () => {
    expect(match("/files/{path=**}", "/files/a/b/c")).toEqual({ path: "a/b/c" });
    expect(match("/files/{path=**}", "/files")).toEqual({ path: "" });
    expect(match("/static/**", "/static/css/site.css")).toEqual({});
    expect(match("/static/**", "/other/css")).toBeUndefined();
  });

  it("a verb must end the last segment", () => {
    expect(match("/v1/{name}:cancel", "/v1/op1:cancel")).toEqual({ name: "op1" });
    expect(match("/v1/{name}:cancel", "/v1/op1")).toBeUndefined();
    expect(match("/v1/{name=operations/*}:cancel", "/v1/operations/op1:cancel")).toEqual({ name: "operations/op1" });
  });

  it.each([
    ["api/v1/list", "must start"],
    ["/a/**/b", "last segment"],
    ["/a/{name", "unbalanced"],
    ["/a/{1name}", "invalid field path"],
    ["/a/{x}/{x}", "bound twice"],
    ["/a/{x={y}}", "nested"],
  ])("refuses the malformed template %s", (template, reason) => {
    expect(() => parsePathTemplate(template)).toThrow(PathTemplateError);
    expect(() => parsePathTemplate(template)).toThrow(reason);
  });

  it("orders literal segments before variables, and variables before **", () => {
    const templates = ["/v1/{a}/x", "/v1/**", "/v1/list/x", "/v1/list"].map(parsePathTemplate);
    expect(templates.sort(compareSpecificity).map((template) => template.template)).toEqual([
      "/v1/list/x",
      "/v1/list",
      "/v1/{a}/x",
      "/v1/**",
    ]);
  });
});
