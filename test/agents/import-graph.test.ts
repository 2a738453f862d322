import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const agentsFolder = path.resolve(import.meta.dirname, "../../src/agents");

/** Every `.ts` file under `root`, by its path relative to it, with the files under `root` it imports. */
function importGraph(root: string): Map<string, string[]> {
  const files = readdirSync(root, { recursive: true, encoding: "utf8" })
    .filter((file) => file.endsWith(".ts"))
    .sort();
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const imported = new Set<string>();
    const source = ts.createSourceFile(file, readFileSync(path.join(root, file), "utf8"), ts.ScriptTarget.Latest);
    const visit = (node: ts.Node): void => {
      const specifier = relativeSpecifierOf(node);
      if (specifier !== undefined) {
        const target = path.join(path.dirname(file), specifier).replace(/\.js$/, ".ts");
        if (files.includes(target)) imported.add(target);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    graph.set(file, [...imported].sort());
  }
  return graph;
}

/** What a node imports by a relative path: `import` and `export ... from` (type-only too), `import()`, `import("...").T`. */
function relativeSpecifierOf(node: ts.Node): string | undefined {
  let specifier: ts.Node | undefined;
  if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) specifier = node.moduleSpecifier;
  else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) specifier = node.arguments[0];
  else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) specifier = node.argument.literal;
  return specifier !== undefined && ts.isStringLiteral(specifier) && specifier.text.startsWith(".") ? specifier.text : undefined;
}

/** The first import cycle found, as the files along it back to the first one; undefined when there is none. */
function firstCycle(graph: Map<string, string[]>): string[] | undefined {
  const done = new Set<string>();
  const trail: string[] = [];
  const walk = (file: string): string[] | undefined => {
    const onTrail = trail.indexOf(file);
    if (onTrail >= 0) return [...trail.slice(onTrail), file];
    if (done.has(file)) return undefined;
    trail.push(file);
    for (const imported of graph.get(file) ?? []) {
      const cycle = walk(imported);
      if (cycle !== undefined) return cycle;
    }
    trail.pop();
    done.add(file);
    return undefined;
  };
  for (const file of graph.keys()) {
    const cycle = walk(file);
    if (cycle !== undefined) return cycle;
  }
  return undefined;
}

describe("the import graph of src/agents", () => {
  it("has no file that imports one that imports it back", () => {
    const graph = importGraph(agentsFolder);
    expect(graph.size).toBeGreaterThan(40);
    const cycle = firstCycle(graph);
    expect(cycle === undefined ? "no cycle" : `import cycle: ${cycle.join(" -> ")}`).toBe("no cycle");
  });

  it("names a cycle made by a type-only import, an export from, a dynamic import or an import type", () => {
    const root = mkdtempSync(path.join(os.tmpdir(), "import-graph-"));
    mkdirSync(path.join(root, "kinds"));
    const write = (file: string, text: string) => writeFileSync(path.join(root, file), text);
    write("factory.ts", 'import { Kind } from "./kinds/kind.js";\nexport const make = () => new Kind();\n');
    write("kinds/kind.ts", 'import type { Call } from "../call.js";\nexport class Kind {}\n');
    write("leaf.ts", 'import { Kind } from "./kinds/kind.js";\nexport { Kind };\n');
    write("call.ts", "export interface Call {}\n");
    expect(firstCycle(importGraph(root))).toBeUndefined();

    const backToTheFactory = [
      'import type { make } from "./factory.js";\nexport type Call = typeof make;\n',
      'export { make } from "./factory.js";\n',
      'export const later = () => import("./factory.js");\n',
      'export type Call = typeof import("./factory.js").make;\n',
    ];
    for (const text of backToTheFactory) {
      write("call.ts", text);
      expect(firstCycle(importGraph(root)), text).toEqual(["call.ts", "factory.ts", "kinds/kind.ts", "call.ts"]);
    }
  });
});
