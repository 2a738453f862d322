// A worker thread starts without the TypeScript loader the process runs under (Node 20 does not hand module hooks to
// workers), so it registers tsx itself before loading the thread's code, as the database thread does.
import { register } from "tsx/esm/api";

register();
await import("./thread-main.ts");
