import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/temporary-directory.ts", "test/support/build.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Each file starts its own servers on port 0; files run in parallel, tests within a file in order.
    pool: "forks",
    // CI reads the totals from the JSON report (.ci/run prints them as "N passed, N failed").
    reporters: process.env.CI ? ["default", ["json", { outputFile: "test-results/vitest.json" }]] : ["default"],
  },
});
