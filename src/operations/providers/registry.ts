import type { Provider } from "./provider.js";

/** The operation types this server executes, each owned by one provider. */
export class ProviderRegistry {
  private readonly providers = new Map<string, Provider>();

  constructor(providers: Iterable<Provider> = []) {
    for (const provider of providers) this.register(provider);
  }

  /** Two providers for one operation name is a wiring mistake, caught at startup. */
  register(provider: Provider): this {
    if (this.providers.has(provider.operation)) throw new Error(`a provider for ${provider.operation} is already registered`);
    this.providers.set(provider.operation, provider);
    return this;
  }

  get(operation: string): Provider | undefined {
    return this.providers.get(operation);
  }

  /** Registered operation names, in registration order. */
  names(): string[] {
    return [...this.providers.keys()];
  }

  /** The operations an agent submits (the descriptor's and MCP's list): all but the native routes' own. */
  submittable(): string[] {
    return [...this.providers.values()].filter((provider) => !provider.native).map((provider) => provider.operation);
  }
}
