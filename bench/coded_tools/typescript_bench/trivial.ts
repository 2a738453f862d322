/** The trivial tool bench/coded-tools.ts calls through each checkout's coded-tool path. */
export class Trivial {
  async asyncInvoke(): Promise<string> {
    return "ok";
  }
}
