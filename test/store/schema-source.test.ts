import { readFile, readdir } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { migrationsDirectory, modelsFile, providers, renderSchema, schemaFile } from "../../src/store/schema-files.js";

describe.each(providers)("the %s schema", (provider) => {
  it("is current with prisma/models.prisma (else run npm run prisma:generate)", async () => {
    const models = await readFile(modelsFile, "utf8");
    expect(await readFile(schemaFile(provider), "utf8")).toBe(renderSchema(provider, models));
  });

  it("is what its newest migration left (else run npm run prisma:migrate -- <name>)", async () => {
    const directory = migrationsDirectory(provider);
    const folders = (await readdir(directory, { withFileTypes: true })).filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort();
    const newest = folders.at(-1);
    expect(newest).toBeDefined();
    const snapshot = await readFile(path.join(directory, newest ?? "", "schema.prisma"), "utf8");
    expect(snapshot).toBe(await readFile(schemaFile(provider), "utf8"));
    expect(await readFile(path.join(directory, "migration_lock.toml"), "utf8")).toContain(`provider = "${provider}"`);
  });
});
