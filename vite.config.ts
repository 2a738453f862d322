import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The web console: web/ is the source, dist/web what the server's `/` serves (src/server/web-console.ts).
export default defineConfig({
  root: fileURLToPath(new URL("./web", import.meta.url)),
  base: "/",
  // web/public (the favicon) is copied as is to dist/web.
  publicDir: "public",
  logLevel: "warn",
  build: {
    outDir: "../dist/web",
    emptyOutDir: true,
    target: "es2022",
  },
});
