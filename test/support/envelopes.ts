/**
 * The five-byte envelope of every message on gRPC, gRPC-Web and Connect streams: flags (1 compressed, 0x80 trailers,
 * 2 Connect's end of stream), then the payload's length, big-endian. A `declaredLength` other than the payload's is
 * for tests of what a server does with a lie.
 */
export function envelope(flags: number, payload: string | Uint8Array, declaredLength?: number): Buffer {
  const bytes = typeof payload === "string" ? Buffer.from(payload) : payload;
  const header = Buffer.alloc(5);
  header[0] = flags;
  header.writeUInt32BE(declaredLength ?? bytes.byteLength, 1);
  return Buffer.concat([header, bytes]);
}

/** The messages of a stream's body, each with its flags. */
export function envelopesOf(body: Buffer): { flags: number; payload: Buffer }[] {
  const messages: { flags: number; payload: Buffer }[] = [];
  for (let at = 0; at < body.byteLength; ) {
    const end = at + 5 + body.readUInt32BE(at + 1);
    messages.push({ flags: body[at]!, payload: body.subarray(at + 5, end) });
    at = end;
  }
  return messages;
}
