import path from "node:path";
import { projectRoot } from "../project-root.js";

/** The databases Axon runs on; each has its own generated schema, client and migrations folder. */
export type Provider = "sqlite" | "postgresql";
export const providers: readonly Provider[] = ["sqlite", "postgresql"];

const folderNames: Record<Provider, string> = { sqlite: "sqlite", postgresql: "postgres" };

/** `prisma/<sqlite|postgres>`: the generated schema.prisma and the migrations folder of one provider. */
export function providerDirectory(provider: Provider): string {
  return path.join(projectRoot, "prisma", folderNames[provider]);
}

export function schemaFile(provider: Provider): string {
  return path.join(providerDirectory(provider), "schema.prisma");
}

export function migrationsDirectory(provider: Provider): string {
  return path.join(providerDirectory(provider), "migrations");
}

/** The provider-independent models every schema is rendered from. */
export const modelsFile = path.join(projectRoot, "prisma", "models.prisma");

/** The generated client's folder (gitignored, produced by `npm run generate`). */
export function clientDirectory(provider: Provider): string {
  return path.join(projectRoot, "src", "gen", "prisma", folderNames[provider]);
}

/**
 * One provider's schema.prisma: a header naming the provider and the client's output, then the shared models.
 * `compilerBuild = "small"`: the query compiler built for size. Its .wasm is half the fast build's, and what V8 does
 * with it at start (compiling it, then optimizing the functions the first queries make hot) takes half the CPU and
 * some 60 MB less memory; once compiled, a query's plan is cached, so the compiler's own speed rarely matters.
 */
export function renderSchema(provider: Provider, models: string): string {
  const output = path.relative(providerDirectory(provider), clientDirectory(provider)).split(path.sep).join("/");
  return `// Generated from prisma/models.prisma by \`npm run prisma:generate\`; do not edit.

datasource db {
  provider = "${provider}"
}

generator client {
  provider            = "prisma-client"
  output              = "${output}"
  runtime             = "nodejs"
  moduleFormat        = "esm"
  importFileExtension = "js"
  compilerBuild       = "small"
}

${models.trimEnd()}
`;
}
