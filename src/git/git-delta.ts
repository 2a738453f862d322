/** A delta that does not apply to its base (gitformat-pack, "Deltified representation"). */
export class DeltaError extends Error {
  override readonly name = "DeltaError";
}

/**
 * Rebuilds an object from its base and a Git delta: two sizes (base, result) as little-endian base-128 numbers, then
 * instructions, each either a copy of a range of the base or a run of new bytes.
 */
export function applyDelta(base: Buffer, delta: Buffer): Buffer {
  let at = 0;
  const size = (): number => {
    let value = 0;
    let shift = 1;
    for (;;) {
      if (at >= delta.length) throw new DeltaError("a delta ends inside its header");
      const byte = delta[at++]!;
      value += (byte & 0x7f) * shift;
      shift *= 128;
      if ((byte & 0x80) === 0) return value;
    }
  };
  if (size() !== base.length) throw new DeltaError("a delta names a base of another size");
  const result = Buffer.alloc(size());
  let written = 0;
  while (at < delta.length) {
    const op = delta[at++]!;
    if (op & 0x80) {
      let offset = 0;
      let length = 0;
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) offset += readByte() * 2 ** (8 * bit);
      for (let bit = 0; bit < 3; bit++) if (op & (0x10 << bit)) length += readByte() * 2 ** (8 * bit);
      if (length === 0) length = 0x10000;
      if (offset + length > base.length || written + length > result.length) throw new DeltaError("a delta copies past its base or its result");
      base.copy(result, written, offset, offset + length);
      written += length;
    } else if (op !== 0) {
      if (at + op > delta.length || written + op > result.length) throw new DeltaError("a delta inserts past its end");
      delta.copy(result, written, at, at + op);
      at += op;
      written += op;
    } else {
      throw new DeltaError("a delta instruction of 0 is reserved");
    }
  }
  if (written !== result.length) throw new DeltaError("a delta builds less than its result size");
  return result;

  function readByte(): number {
    if (at >= delta.length) throw new DeltaError("a delta ends inside a copy instruction");
    return delta[at++]!;
  }
}
