import { create, toBinary } from "@bufbuild/protobuf";
import { createContextValues, type HandlerContext } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { AgentRegistry } from "../../src/agents/registry.js";
import { NetworkAccess } from "../../src/auth/network-access.js";
import { ConciergeRequestSchema, ConciergeResponseSchema, type ConciergeResponse } from "../../src/gen/neuro_san/api/grpc/concierge_pb.js";
import { conciergeService } from "../../src/server/concierge-service.js";
import { principalKey } from "../../src/server/context.js";
import { encodedOnce, frozen } from "../../src/server/frozen-answers.js";
import { NetworkFolder, smallNetwork } from "../agents/fixture.js";

let folder: NetworkFolder | undefined;
let registry: AgentRegistry | undefined;
afterEach(async () => {
  registry?.close();
  await folder?.remove();
});

describe("frozen answers", () => {
  const message = () => create(ConciergeResponseSchema, { agents: [{ agentName: "one", description: "One", tags: ["a"] }] });

  it("keep one encoding per form for a frozen message, and encode any other message every time", () => {
    let encodings = 0;
    const encode = (answer: ConciergeResponse) => () => (encodings++, toBinary(ConciergeResponseSchema, answer));
    const kept = frozen(message());
    const first = encodedOnce(kept, toBinary, encode(kept));
    expect(encodedOnce(kept, toBinary, encode(kept))).toBe(first);
    expect(encodedOnce(kept, "another form", encode(kept))).not.toBe(first);
    expect(encodings).toBe(2);
    const changing = message();
    encodedOnce(changing, toBinary, encode(changing));
    encodedOnce(changing, toBinary, encode(changing));
    expect(encodings).toBe(4);
  });

  it("freeze the message through its lists and nested messages", () => {
    const kept = frozen(message());
    expect(() => kept.agents.push(kept.agents[0]!)).toThrow(TypeError);
    expect(() => void (kept.agents[0]!.description = "changed")).toThrow(TypeError);
    expect(() => kept.agents[0]!.tags.push("b")).toThrow(TypeError);
  });
});

describe("List's frozen answer", () => {
  async function served(access: NetworkAccess) {
    folder = await NetworkFolder.create({
      "registries/manifest.hocon": `"one.hocon": true\n"two.hocon": true`,
      "registries/one.hocon": smallNetwork("One"),
      "registries/two.hocon": smallNetwork("Two"),
    });
    registry = await AgentRegistry.load({ manifestFile: folder.path("registries/manifest.hocon"), projectRoot: folder.root });
    const service = conciergeService(registry, access);
    const list = (caller?: string) => {
      const values = createContextValues();
      if (caller) values.set(principalKey, { name: caller, kind: "client" });
      return service.list!(create(ConciergeRequestSchema), { values } as HandlerContext) as ConciergeResponse;
    };
    return { list, folder };
  }
  const names = (answer: ConciergeResponse) => answer.agents.map((agent) => agent.agentName);

  it("is the same frozen message until the networks change, then lists the new ones", async () => {
    const { list, folder } = await served(NetworkAccess.open);
    const first = list();
    expect(names(first)).toEqual(["one", "two"]);
    expect(Object.isFrozen(first)).toBe(true);
    expect(list("anyone")).toBe(first);
    await folder.write({ "registries/manifest.hocon": `"one.hocon": true`, "registries/one.hocon": smallNetwork("One, revised") });
    await registry!.reload();
    const after = list();
    expect(after).not.toBe(first);
    expect(names(after)).toEqual(["one"]);
    expect(after.agents[0]!.description).toBe("One, revised");
  });

  it("is one message per set of networks callers see, not one per caller", async () => {
    const access = NetworkAccess.fromDocument({ alice: ["one"], bob: ["t*"], carol: ["one"] }, "access.json");
    const { list } = await served(access);
    expect(names(list("alice"))).toEqual(["one"]);
    expect(names(list("bob"))).toEqual(["two"]);
    expect(names(list())).toEqual([]);
    expect(list("carol")).toBe(list("alice"));
    expect(list("bob")).not.toBe(list("alice"));
  });
});
