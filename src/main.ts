// What `npm start` runs. Node 22.1 and later keep the code V8 compiles from the build between runs (in the system's
// temporary folder), so a restart skips compiling the bundle again: switched on here, before the bundle loads.
import module from "node:module";

(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();
await import("./serve.js");
